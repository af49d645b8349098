// Package result holds what a git sync did, apart from package gitsync so
// that the command line can name it without linking git.
package result

// Result says what a sync did; bl sync --json prints it.
type Result struct {
	Branch    string `json:"branch"`
	Remote    string `json:"remote,omitempty"`
	Commit    string `json:"commit,omitempty"` // the branch's commit afterwards
	Committed bool   `json:"committed"`        // a new commit was made
	Message   string `json:"message,omitempty"`
	Pulled    int    `json:"pulled"`  // events the remote had that the backlog lacked
	Rebased   int    `json:"rebased"` // local events now after the remote's history
	Conflicts int    `json:"conflicts"`
	Pushed    bool   `json:"pushed"`
	Tries     int    `json:"tries,omitempty"`
	Author    string `json:"author,omitempty"` // who a new commit names as author and committer
	// GuessedAuthor: git has no user.email here, so Author was made up
	// (see Syncer.Identity).
	GuessedAuthor bool `json:"-"`
}

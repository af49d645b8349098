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
	Carried   int    `json:"-"`                // noted heartbeats of other cards the push carried (gitsync carried.go)
	Author    string `json:"author,omitempty"` // who a new commit names as author and committer
	// GuessedAuthor: git has no user.email here, so Author was made up
	// (see Syncer.Identity).
	GuessedAuthor bool `json:"-"`
	// Renamed are local cards whose id the remote had created too: they
	// now have a fresh id (the remote's card keeps the id).
	Renamed []Renamed `json:"renamed,omitempty"`
	// CreatedTwice are cards this clone already held two creates of (a
	// plain git merge brought them together, or one arrived after this
	// clone pushed its own): not renamed; bl doctor names them.
	CreatedTwice []string `json:"created_twice,omitempty"`
}

// Renamed is a local card bl sync gave a fresh id because the remote
// holds another card created with its id.
type Renamed struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Events int    `json:"events"` // local events rewritten to name To
}

// LeaseRefusal is what of a lease ref's commit bl sets aside rather than
// fold: one line, or the whole commit (Line 0).
type LeaseRefusal struct {
	Ref    string `json:"ref"`
	Card   string `json:"card"`
	Commit string `json:"commit"`
	Line   int    `json:"line,omitempty"` // 1-based among the commit's ledger lines; 0: the whole commit
	Reason string `json:"reason"`
}

// LeaseReport is what bl doctor --remote found of the remote's lease refs.
type LeaseReport struct {
	Remote string         `json:"remote"`
	Prefix string         `json:"prefix"` // this backlog's lease refs: refs/bl/leases/<namespace>/
	Refs   int            `json:"refs"`   // lease refs under Prefix
	Bad    []LeaseRefusal `json:"bad"`    // what is set aside, ref by ref
	// Retired is the lease ref replaced by a tip that keeps only the
	// lines bl folds; "" when none was asked for.
	Retired string `json:"retired,omitempty"`
	Tip     string `json:"tip,omitempty"` // its new tip
}

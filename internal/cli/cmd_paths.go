package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/internal/gitwork"
	"github.com/bl-backlog/bl/ledger"
)

// PathsCmd checks files against the paths live claims hold.
type PathsCmd struct {
	Action string   `arg:"" enum:"check,list" help:"check: refuse files another owner holds; list: the paths held now."`
	Files  []string `arg:"" optional:"" placeholder:"FILE" help:"Files to check, as the shell names them: relative to the current directory, or absolute inside the repository (default: the files staged for commit)."`
	Owner  string   `help:"Your lease owner: files your own claims hold pass (default: the actor)."`
}

func (PathsCmd) Help() string {
	return `A card may name the files its work touches (bl create --paths GLOB). While
it is claimed under a live lease, or in review, those paths are held: bl
claim passes over cards whose paths overlap them, and bl paths check
refuses files held by another owner's card, naming card and owner (exit
4, code paths_held). With no files it checks the files staged for the next
commit, so it works as a git pre-commit hook:

    #!/bin/sh
    exec bl paths check --owner "$BL_OWNER"

Reservations are advisory: bl claim honours them, but nothing stops an
edit or a commit of a held file unless the pre-commit hook above is
installed (or bl run's worktrees commit through it).

Files are named as the shell names them: relative to the current directory
(in a subdirectory too) or absolute; bl checks each as its path from the
root of the repository it lies in (src/../src/x.go, ./src//x.go and
$PWD/src/x.go are all src/x.go). A file outside the repository is refused
(exit 2). Globs are from the repository root: '*' stays within a path
segment, '**' spans any number of them, and a glob whose last segment has
no wildcard also covers everything below it (src/lexer holds
src/lexer/scan.go).

Examples:

    bl paths check src/lexer/scan.go
    bl paths check --owner agent-2
    bl paths list --json` + exitCodesHelp
}

// pathHit is a file another owner's card holds.
type pathHit struct {
	File  string        `json:"file"`
	Card  string        `json:"card"`
	Owner string        `json:"owner,omitempty"`
	State ledger.Status `json:"status"`
}

func (c *PathsCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	holds, err := b.PathHolds()
	if err != nil {
		return err
	}
	if holds == nil {
		holds = []ledger.Hold{}
	}
	if c.Action == "list" {
		return a.emit(holds, func(w io.Writer) {
			if len(holds) == 0 {
				fmt.Fprintln(w, "no paths held")
			}
			for _, h := range holds {
				fmt.Fprintf(w, "%s  %s (%s)  %s\n", h.Card, nameText(dash(h.Owner)), h.Status, text(strings.Join(h.Paths, " ")))
			}
		})
	}
	files := c.Files
	if len(files) == 0 {
		if files, err = gitwork.StagedFiles(a.ctx, "."); err != nil {
			return err
		}
	} else if files, err = a.repoPaths(files); err != nil {
		return err
	}
	me := a.Owner(c.Owner)
	hits := []pathHit{}
	for _, f := range files {
		for _, h := range holds {
			if h.Owner == me {
				continue
			}
			if held := slicesAny(h.Paths, func(g string) bool { return ledger.PathMatches(g, f) }); held {
				hits = append(hits, pathHit{File: f, Card: h.Card, Owner: h.Owner, State: h.Status})
				break
			}
		}
	}
	if len(hits) == 0 {
		return a.emit(hits, func(w io.Writer) { fmt.Fprintf(w, "%d files checked: none held by another owner\n", len(files)) })
	}
	if a.JSON {
		if err := a.emit(hits, nil); err != nil {
			return err
		}
	}
	var lines []string
	for _, h := range hits {
		lines = append(lines, fmt.Sprintf("%s is held by %s (%s, %s)", text(h.File), h.Card, nameText(dash(h.Owner)), h.State))
	}
	return ledger.Errorf(ledger.ErrPathsHeld, "%s; commit it once that card is done or released, or coordinate with its owner", strings.Join(lines, "; "))
}

func slicesAny(list []string, f func(string) bool) bool {
	for _, s := range list {
		if f(s) {
			return true
		}
	}
	return false
}

// repoPaths names each file as its path from the root of the repository
// the current directory lies in (the directory holding .git; without one,
// the one holding the backlog): "src/../src/x.go", "./src//x.go", an
// absolute path and a path from a subdirectory all name the file a glob
// names. A file outside the repository is refused.
func (a *App) repoPaths(files []string) ([]string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root, err := gitdir.Root(wd)
	if err != nil {
		dir, ferr := a.findDir()
		if ferr != nil {
			return nil, ferr
		}
		root = filepath.Dir(dir)
	}
	out := make([]string, 0, len(files))
	for _, f := range files {
		if strings.TrimSpace(f) == "" {
			return nil, usagef("an empty file name")
		}
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(wd, f)
		}
		rel, ok := within(root, filepath.Clean(abs))
		if !ok {
			// The same directory by another name (a symbolic link)?
			r, rerr := filepath.EvalSymlinks(root)
			d, derr := filepath.EvalSymlinks(filepath.Dir(abs))
			if rerr == nil && derr == nil {
				rel, ok = within(r, filepath.Join(d, filepath.Base(abs)))
			}
		}
		if !ok {
			return nil, usagef(fmt.Sprintf("%s is outside the repository at %s: name files inside it", text(f), text(root)))
		}
		out = append(out, rel)
	}
	return out, nil
}

// within is path p from root, slash-separated, when p lies below root.
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

package gitsync

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/format/gitattributes"

	"github.com/bl-backlog/bl/ledger"
)

// Line ends of the text files bl commits from the worktree (config.json,
// .gitignore, .gitattributes, the board). git add runs them through its
// "clean" conversion: in a clone with core.autocrlf=true (or input), or
// where .gitattributes marks them text, a CRLF worktree file is stored
// with LF line ends. bl builds its commits itself, so it does the same, or
// a CRLF clone would commit every line of config.json changed and the next
// edit from an LF clone would conflict on every line. Event files are
// -text (.backlog/.gitattributes): their bytes are stored as they are.

// eolText reports whether git stores the tracked file name (relative to
// the backlog) with LF line ends.
func (g *Repo) eolText(name string) bool {
	if isSegment(name) || name == ledger.LedgerFile || name == ledger.SnapshotFile {
		return false // -text in .backlog/.gitattributes
	}
	g.eolOnce.Do(g.loadEOL)
	full := name
	if g.prefix != "" {
		full = g.prefix + "/" + name
	}
	if g.eolAttrs != nil {
		res, ok := g.eolAttrs.Match(strings.Split(full, "/"), []string{"text", "eol"})
		if ok {
			if a := res["text"]; a != nil && a.IsUnset() {
				return false
			}
			if a := res["text"]; a != nil && (a.IsSet() || a.IsValueSet()) {
				return true
			}
			if a := res["eol"]; a != nil && a.IsValueSet() {
				return true
			}
		}
	}
	return g.eolAuto
}

func (g *Repo) loadEOL() {
	if cfg, err := g.repo.ConfigScoped(gitconfig.GlobalScope); err == nil && cfg.Raw != nil {
		switch strings.ToLower(cfg.Raw.Section("core").Option("autocrlf")) {
		case "true", "input", "yes", "on", "1":
			g.eolAuto = true
		}
	}
	var stack []gitattributes.MatchAttribute
	read := func(path string, domain []string, inTree bool) {
		f, err := openAttributes(path, inTree)
		if err != nil {
			return
		}
		defer f.Close()
		if ms, err := gitattributes.ReadAttributes(f, domain, true); err == nil {
			stack = append(stack, ms...)
		}
	}
	read(filepath.Join(g.root, ".gitattributes"), nil, true)
	if g.prefix != "" {
		read(filepath.Join(g.root, filepath.FromSlash(g.prefix), ".gitattributes"), strings.Split(g.prefix, "/"), true)
	}
	read(filepath.Join(g.commonDir, "info", "attributes"), nil, false)
	if len(stack) > 0 {
		g.eolAttrs = gitattributes.NewMatcher(stack)
	}
}

// openAttributes opens an attributes file as git reads it: a
// .gitattributes of the worktree (inTree) that is a symbolic link is
// ignored, as git ignores it (a teammate can commit .gitattributes ->
// /dev/stdin or /dev/tty: read, it would hold bl sync on the terminal or
// the agent's pipe past SIGTERM); and only a regular file is read, opened
// without waiting on a FIFO.
func openAttributes(path string, inTree bool) (*os.File, error) {
	if fi, err := os.Lstat(path); err != nil || inTree && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errNotAttributes
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errNotAttributes
	}
	return f, nil
}

// errNotAttributes: an attributes file bl does not read.
var errNotAttributes = errors.New("not a regular attributes file")

// clean is the blob git add would store for the worktree file name.
func (g *Repo) clean(name string, data []byte) []byte {
	if data == nil || !bytes.Contains(data, []byte("\r\n")) || !g.eolText(name) {
		return data
	}
	return bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
}

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/ledger"
)

// ExportCmd renders the backlog as a board, a graph or a table.
type ExportCmd struct {
	Format string   `short:"f" placeholder:"FORMAT" help:"One of the formats listed below (default: from the extension of the -o or --check file, else markdown)."`
	Output string   `name:"output" short:"o" placeholder:"FILE" help:"Write to FILE (replaced atomically, left alone when unchanged; a pipe or device is written into) instead of stdout."`
	Check  string   `placeholder:"FILE" help:"Do not write: compare FILE with a fresh export; exit 1 with a diff on stderr when it is out of date."`
	Status []string `placeholder:"STATUS" help:"Only these statuses: ready, claimed, blocked, done (repeat or comma-separate); the board shows only their lanes."`
	Phase  []string `sep:"none" placeholder:"PHASE" help:"Only this phase (repeat for more)."`
	Graph  bool     `help:"markdown: add the dependency graph as a Mermaid block (GitHub draws it)."`
	Title  string   `placeholder:"TEXT" help:"Heading of the markdown and html boards (default Backlog)."`
}

func (ExportCmd) Help() string {
	return `Renders the cards for people and tools. Output depends only on the backlog
(never on the order of events or the clock), except html, which is stamped
with the time. Dependency edges point from a card to the cards that depend
on it: A1 --> A2 when A2 depends on A1.

` + export.FormatsHelp("    ") + `
--json alone prints the cards as a JSON array (as --format json); with -o
or --check it prints what was done as a JSON object.

With --check FILE nothing is written: bl exits 0 when FILE matches a fresh
export made with the same flags, and 1 with a short diff on stderr when it
is out of date. Line endings are not compared. See docs/EXPORT.md.

Examples:

    bl export                                   # the markdown board on stdout
    bl export -o BACKLOG.md --graph             # commit it next to the code
    bl export --check BACKLOG.md --graph        # in CI or a pre-commit hook
    bl export --format html -o board.html --status ready,claimed,blocked
    bl export --format mermaid --phase M1
    bl export --format csv -o cards.csv` + exitCodesHelp
}

func (c *ExportCmd) Run(a *App) error {
	format, statuses, err := c.options(a)
	if err != nil {
		return err
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	cards, err := b.List(ledger.Filter{Status: statuses, Phases: c.Phase}, ledger.SortClaim)
	if err != nil {
		return err
	}
	conflicts, err := cardConflicts(b, "")
	if err != nil {
		return err
	}
	cmdline := c.command(format, statuses)
	waiting, err := waitingOn(b, cards)
	if err != nil {
		return err
	}
	out, err := export.Bytes(format, cards, export.Options{Title: c.Title, Statuses: statuses, Graph: c.Graph, Command: cmdline, Now: a.now(), WaitingOn: waiting, Conflicts: conflicts})
	if err != nil {
		return err
	}

	switch {
	case c.Check != "":
		return c.check(a, format, out, cmdline)
	case c.Output != "":
		return c.write(a, format, out, len(cards))
	}
	_, err = a.Stdout.Write(out)
	return err
}

// options checks the flags against each other and reads the format and
// the statuses to export.
func (c *ExportCmd) options(a *App) (export.Format, []ledger.Status, error) {
	if c.Output != "" && c.Check != "" {
		return "", nil, usagef("-o and --check exclude each other: write the export, or check a file against it")
	}
	format, err := c.format()
	if err != nil {
		return "", nil, err
	}
	if a.JSON && c.Output == "" && c.Check == "" {
		// --json asks for machine output on stdout: the cards as JSON,
		// never a board in another format.
		switch {
		case c.Format == "":
			format = export.JSON
		case format != export.JSON && format != export.JSONL:
			return "", nil, usagef(fmt.Sprintf("--json prints the cards as JSON, but --format is %s: drop --json, or use --format json or jsonl", format))
		}
	}
	if c.Check != "" && format.TimeDependent() {
		return "", nil, usagef(fmt.Sprintf("--check cannot compare %s: it is stamped with the export time; check a markdown board instead", format))
	}
	statuses, err := parseStatuses(splitList(c.Status))
	if err != nil {
		return "", nil, err
	}
	for _, p := range c.Phase {
		if strings.TrimSpace(p) == "" {
			return "", nil, usagef("--phase is empty: name a phase")
		}
	}
	return format, statuses, nil
}

// format is --format, else the one the file's extension names, else
// markdown.
func (c *ExportCmd) format() (export.Format, error) {
	if c.Format != "" {
		f, err := export.ParseFormat(c.Format)
		if err != nil {
			return "", usagef("--format: " + err.Error())
		}
		return f, nil
	}
	for _, path := range []string{c.Check, c.Output} {
		if f, ok := export.FormatForPath(path); ok {
			return f, nil
		}
	}
	return export.Markdown, nil
}

// check compares the file with the fresh export.
func (c *ExportCmd) check(a *App, format export.Format, fresh []byte, cmdline string) error {
	fix := cmdline + " -o " + exportShellQuote(c.Check)
	old, err := os.ReadFile(c.Check)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return fmt.Errorf("read %s: %w", c.Check, err)
	}
	oldText, newText := unixLines(old), unixLines(fresh)
	diff := ""
	if !missing {
		diff = export.Diff(c.Check+" (on disk)", oldText, "bl export (the backlog now)", newText, 3, 60)
	}
	ok := !missing && diff == ""
	type result struct {
		File     string `json:"file"`
		Format   string `json:"format"`
		UpToDate bool   `json:"up_to_date"`
		Diff     string `json:"diff,omitempty"`
	}
	if ok {
		return a.emit(result{c.Check, string(format), true, ""}, func(w io.Writer) {
			fmt.Fprintf(w, "%s is up to date\n", c.Check)
		})
	}
	var madeBy string // the command that made the file, when it is not ours
	if by, ok := export.GeneratedBy(oldText); ok && format == export.Markdown && by != cmdline {
		madeBy = by
	}
	if a.JSON {
		if err := writeJSON(a.Stdout, result{c.Check, string(format), false, diff}); err != nil {
			return err
		}
	} else if diff != "" && madeBy == "" {
		io.WriteString(a.Stderr, diff)
	}
	switch {
	case missing:
		return fmt.Errorf("%s does not exist: create it with `%s`", c.Check, fix)
	case madeBy != "":
		return fmt.Errorf("%s was made by `%s` but this check renders `%s`: check with the same flags", c.Check, madeBy, cmdline)
	}
	return fmt.Errorf("%s is out of date with the backlog: regenerate it with `%s`", c.Check, fix)
}

// command is the canonical command line for this export, without the
// output file: every spelling of the same export (format guessed or given,
// statuses in any order, -o or a shell redirect) gives the same line, so a
// board written one way checks clean another way.
func (c *ExportCmd) command(format export.Format, statuses []ledger.Status) string {
	args := []string{"bl", "export", "--format", string(format)}
	if len(statuses) > 0 {
		var names []string
		for _, s := range ledger.Statuses {
			if slices.Contains(statuses, s) {
				names = append(names, string(s))
			}
		}
		args = append(args, "--status", strings.Join(names, ","))
	}
	phases := slices.Clone(c.Phase)
	slices.Sort(phases)
	for _, p := range slices.Compact(phases) {
		args = append(args, "--phase", exportShellQuote(p))
	}
	if c.Graph && format == export.Markdown {
		args = append(args, "--graph")
	}
	if c.Title != "" {
		args = append(args, "--title", exportShellQuote(c.Title))
	}
	return strings.Join(args, " ")
}

// write replaces the output file atomically, and not at all when it already
// holds these bytes.
func (c *ExportCmd) write(a *App, format export.Format, out []byte, cards int) error {
	type result struct {
		File    string `json:"file"`
		Format  string `json:"format"`
		Cards   int    `json:"cards"`
		Bytes   int    `json:"bytes"`
		Changed bool   `json:"changed"`
	}
	// A link given as -o (/dev/stdout, a link into another tree) names
	// the file to write: replaced in place, the link would become a file
	// (as root, /dev/stdout for everyone).
	target := c.Output
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(target); err == nil {
			target = real
		} else if to, err := os.Readlink(target); err == nil {
			// A link to a file not written yet: the file it names.
			if !filepath.IsAbs(to) {
				to = filepath.Join(filepath.Dir(target), to)
			}
			target = to
		}
	}
	changed := true
	if fi, err := os.Stat(target); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// A pipe or a device (-o >(cmd), a fifo, /dev/stdout): written
		// into, as asked. Read first, it would block; replaced, the
		// reader would get nothing.
		if err := writeInto(c.Output, out); err != nil {
			return err
		}
	} else {
		old, err := os.ReadFile(target)
		changed = err != nil || !bytes.Equal(old, out)
		if changed {
			if err := writeExportFile(target, out); err != nil {
				return err
			}
		}
	}
	return a.emit(result{c.Output, string(format), cards, len(out), changed}, func(w io.Writer) {
		verb := "wrote"
		if !changed {
			verb = "unchanged"
		}
		fmt.Fprintf(w, "%s %s (%s, %s)\n", verb, c.Output, format, exportPlural(cards, "card"))
	})
}

// writeInto writes data into the pipe or device at path.
func writeInto(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeExportFile replaces path with data. A path that cannot be a file
// (a directory, or in a directory that does not exist) is the caller's
// to fix (exit 2), named as given, not by the temp file written beside it.
func writeExportFile(path string, data []byte) error {
	if dir := filepath.Dir(path); dir != "" {
		if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return ledger.Errorf(ledger.ErrInvalid, "write %s: the directory %s does not exist", path, dir)
		} else if err == nil && !fi.IsDir() {
			return ledger.Errorf(ledger.ErrInvalid, "write %s: %s is not a directory", path, dir)
		}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return ledger.Errorf(ledger.ErrInvalid, "write %s: it is a directory", path)
	}
	if err := fsutil.ReplaceFile(path, data, nil); err != nil {
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// unixLines normalises CRLF line ends, so a checkout with core.autocrlf
// still compares equal.
func unixLines(b []byte) string {
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func exportShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,:=+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func exportPlural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

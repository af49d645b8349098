package gitdir

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ErrMissing: the repository has no object by that name (or the name is
// ambiguous, or names something git cannot peel as asked).
var ErrMissing = errors.New("no such object")

// Objects reads objects from a repository through one running
// `git cat-file --batch`: a caller that needs a few commits, trees and
// blobs pays for one git process, not one per object (bl diff of two
// commits reads the trees and the blobs that differ this way, without
// linking a git library). Names are git's (a hash, HEAD~1^{commit},
// <tree>:<path>), sent as input lines, never as arguments: a name that
// starts with "-" is not an option. Not safe for concurrent use.
type Objects struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	// Read, when set, is told the name of every object read (for tests
	// that prove what is left unread).
	Read func(name string)
	// command: cat-file runs with --batch-command (Info works);
	// answered: it has answered once (so it is not a git too old for it).
	command, answered bool
	ctx               context.Context
}

// OpenObjects starts git cat-file --batch-command in dir (git 2.36+;
// an older git gets --batch, and no Info), with the environment Run
// gives git, lazy fetches off. ErrNoGit when git is not on PATH.
func OpenObjects(ctx context.Context, dir string) (*Objects, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return nil, ErrNoGit
	}
	o := &Objects{command: true, ctx: ctx}
	if err := o.start(ctx, path, dir); err != nil {
		return nil, err
	}
	return o, nil
}

// start runs git cat-file, in its --batch-command mode when o.command.
func (o *Objects) start(ctx context.Context, path, dir string) error {
	mode := "--batch"
	if o.command {
		mode = "--batch-command"
	}
	o.cmd = exec.CommandContext(ctx, path, "cat-file", mode)
	o.cmd.Dir = dir
	// A reader asks for objects the repository holds: in a partial clone
	// a missing one is missing, not fetched from the network (git 2.44+).
	o.cmd.Env = append(env(os.Environ(), ""), "GIT_NO_LAZY_FETCH=1")
	o.stderr.Reset()
	o.cmd.Stderr = &o.stderr
	var err error
	if o.in, err = o.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := o.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	o.out = bufio.NewReaderSize(out, 64<<10)
	return o.cmd.Start()
}

// ask sends one request line and reads the header of its answer. A git
// older than --batch-command ends at the first request: cat-file is
// started again in --batch mode and asked again.
func (o *Objects) ask(verb, name string) (string, error) {
	line := name + "\n"
	if o.command {
		line = verb + " " + line
	}
	_, err := io.WriteString(o.in, line)
	header := ""
	if err == nil {
		header, err = o.out.ReadString('\n')
	}
	if err != nil && o.command && !o.answered {
		o.in.Close()
		_ = o.cmd.Wait()
		o.command = false
		if err := o.start(o.ctx, o.cmd.Path, o.cmd.Dir); err != nil {
			return "", err
		}
		if verb != "contents" {
			return "", ErrNoInfo
		}
		return o.ask(verb, name)
	}
	if err != nil {
		return "", o.failed(err)
	}
	o.answered = true
	return header, nil
}

// header decodes "<id> <type> <size>"; "<name> missing" / "<name>
// ambiguous" and the like are ErrMissing (a name may hold spaces, so the
// answer is read from the end).
func header(name, h string) (id, typ string, size int64, err error) {
	fields := strings.Fields(h)
	if len(fields) != 3 || !isHex(fields[0]) {
		return "", "", 0, fmt.Errorf("%w: %q", ErrMissing, name)
	}
	size, err = strconv.ParseInt(fields[2], 10, 64)
	if err != nil || size < 0 {
		return "", "", 0, fmt.Errorf("%w: %q", ErrMissing, name)
	}
	return fields[0], fields[1], size, nil
}

// ErrNoInfo: the git cat-file running is older than --batch-command.
var ErrNoInfo = errors.New("git cat-file: no info command")

// Info is the full hash, type and size of the object name names, its
// bytes left unread. ErrMissing when git knows no such object, ErrNoInfo
// with a git older than 2.36.
func (o *Objects) Info(name string) (id, typ string, size int64, err error) {
	if name == "" || strings.ContainsAny(name, "\n\r\x00") {
		return "", "", 0, fmt.Errorf("%w: %q", ErrMissing, name)
	}
	if !o.command {
		return "", "", 0, ErrNoInfo
	}
	h, err := o.ask("info", name)
	if err != nil {
		return "", "", 0, err
	}
	return header(name, h)
}

// Get reads the object name names: its full hash, type ("commit",
// "tree", "blob", "tag") and bytes. ErrMissing when git knows no such
// object.
func (o *Objects) Get(name string) (id, typ string, data []byte, err error) {
	if name == "" || strings.ContainsAny(name, "\n\r\x00") {
		return "", "", nil, fmt.Errorf("%w: %q", ErrMissing, name) // one name a line
	}
	h, err := o.ask("contents", name)
	if err != nil {
		return "", "", nil, err
	}
	id, typ, size, err := header(name, h)
	if err != nil {
		return "", "", nil, err
	}
	data = make([]byte, size+1) // and the newline after the object
	if _, err := io.ReadFull(o.out, data); err != nil {
		return "", "", nil, o.failed(err)
	}
	if o.Read != nil {
		o.Read(name)
	}
	return id, typ, data[:size], nil
}

// failed is err with what git said, when it stopped.
func (o *Objects) failed(err error) error {
	if s := strings.TrimSpace(o.stderr.String()); s != "" {
		return fmt.Errorf("git cat-file: %s", s)
	}
	return fmt.Errorf("git cat-file: %w", err)
}

// Close ends the git process.
func (o *Objects) Close() error {
	o.in.Close()
	return o.cmd.Wait()
}

func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// TreeEntry is one entry of a git tree object.
type TreeEntry struct {
	Mode uint32 // octal as git writes it: 040000 a directory, 0100644 a file
	Name string
	ID   string // hex
}

// Modes of tree entries.
const (
	ModeDir        = 0o040000
	ModeFile       = 0o100644
	ModeExecutable = 0o100755
)

// ParseTree decodes a tree object whose entries name objects by hashes of
// idLen bytes (20 for SHA-1, 32 for SHA-256).
func ParseTree(data []byte, idLen int) ([]TreeEntry, error) {
	var entries []TreeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp <= 0 || nul < sp || len(data) < nul+1+idLen {
			return nil, errors.New("damaged tree object")
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, errors.New("damaged tree object")
		}
		entries = append(entries, TreeEntry{
			Mode: uint32(mode),
			Name: string(data[sp+1 : nul]),
			ID:   fmt.Sprintf("%x", data[nul+1:nul+1+idLen]),
		})
		data = data[nul+1+idLen:]
	}
	return entries, nil
}

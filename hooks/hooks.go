// Package hooks runs what a person asked to happen when the backlog
// changes: commands, and webhooks that post the event, after an event is
// durable; and pre-complete validators that may refuse a completion
// before it is written.
//
// Hooks run code, so they never come from files git tracks: a cloned
// repository must not execute anything (the reason git never tracks
// .git/hooks). They live in .backlog/hooks.json, which bl init lists in
// .backlog/.gitignore; a hooks.json that git tracks anyway is refused with
// a warning, and so is one that is a symbolic link or one git cannot vouch
// for. config.json, which is tracked, cannot define hooks.
//
// hooks.json:
//
//	{"hooks": [
//	  {"name": "notify", "on": ["complete", "fail"], "command": ["./scripts/notify.sh"], "timeout": "10s"},
//	  {"name": "chat", "on": ["claim"], "url": "https://example.com/hook", "secret": "s3cret", "retries": 2},
//	  {"name": "tests", "on": ["pre-complete"], "command": ["sh", "-c", "go test ./..."], "timeout": "5m"}
//	]}
//
// A command gets the event as one JSON line on stdin (the form bl watch
// --json prints) and BL_HOOK, BL_OP, BL_CARD, BL_EVENT_ID, BL_CURSOR,
// BL_ACTOR, BL_OWNER, BL_EPOCH and BL_DIR in its environment, plus
// BL_IN_HOOK=1: writes a hook makes do not fire hooks again. A webhook
// posts the same JSON with X-BL-Event (the op), X-BL-Delivery (the event
// id) and, with a secret, X-BL-Signature-256: sha256=HEX, the HMAC-SHA256
// of the body under the secret.
//
// After-event hooks run in event order, then in file order, outside the
// writers' lock, each bounded by its timeout; a failure is reported and
// never undoes or blocks the write. A pre-complete hook gets the card and
// the completion as JSON on stdin; a non-zero exit (or a timeout) refuses
// the completion with the hook's output as the reason.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/fsutil"
	"github.com/bl-backlog/bl/gitdir"
	"github.com/bl-backlog/bl/ledger"
)

// File is the hooks file in the backlog directory. It is local: bl init
// lists it in .backlog/.gitignore.
const File = "hooks.json"

// PreComplete is the "on" value of a completion validator.
const PreComplete = "pre-complete"

// InHookEnv is set for every hook command: bl run inside a hook does not
// fire hooks again, so two hooks cannot trigger each other forever.
const InHookEnv = "BL_IN_HOOK"

// Default bounds.
const (
	DefaultTimeout = 10 * time.Second
	DefaultRetries = 2
	maxOutput      = 4 << 10 // bytes of a hook's output kept for messages
)

// Hook is one entry of hooks.json.
type Hook struct {
	Name    string   `json:"name,omitempty"`
	On      []string `json:"on"`                // ops ("complete", "claim", ...), "*" for all, or "pre-complete"
	Command []string `json:"command,omitempty"` // argv; no shell unless you name one
	URL     string   `json:"url,omitempty"`     // webhook
	Secret  string   `json:"secret,omitempty"`  // webhook HMAC-SHA256 key
	Timeout string   `json:"timeout,omitempty"` // Go duration; DefaultTimeout when empty
	Retries *int     `json:"retries,omitempty"` // webhook retries after the first try; DefaultRetries when nil

	timeout time.Duration
}

// label names the hook in messages.
func (h *Hook) label() string {
	if h.Name != "" {
		return strconv.Quote(h.Name)
	}
	if len(h.Command) > 0 {
		return strconv.Quote(strings.Join(h.Command, " "))
	}
	return strconv.Quote(h.URL)
}

func (h *Hook) retries() int {
	if h.Retries == nil {
		return DefaultRetries
	}
	return max(0, *h.Retries)
}

func (h *Hook) fires(op string) bool {
	return slices.Contains(h.On, op) || (op != PreComplete && slices.Contains(h.On, "*"))
}

// Webhook is what a webhook delivery needs.
type Webhook struct {
	URL     string
	Secret  string
	Timeout time.Duration // per try
	Retries int
	Event   string // X-BL-Event
	ID      string // X-BL-Delivery
}

// DeliverFunc posts body to a webhook: webhook.Deliver with net/http, or
// in the lean bl, which links no HTTP client, a bl-git child.
type DeliverFunc func(ctx context.Context, w Webhook, body []byte) error

// Set is a loaded hooks.json.
type Set struct {
	// Deliver posts the webhooks; when nil, a webhook fails (its
	// failure is reported like any hook's).
	Deliver DeliverFunc

	dir   string
	hooks []Hook
}

// Warnings from Load.
var (
	errTracked = errors.New("is tracked by git, and hooks run code: a clone must not run what it was given. Untrack it (git rm --cached) and keep it local; its hooks are ignored until then")
	errSymlink = errors.New("is a symbolic link; hooks must be a plain local file. Its hooks are ignored")
)

// Load reads dir/hooks.json. A missing file costs one stat and gives a
// nil Set (no hooks). A file that must not be trusted (tracked by git, a
// symbolic link) gives a nil Set and a warning; one that does not parse
// gives an error naming what is wrong.
func Load(ctx context.Context, dir string) (s *Set, warning string, err error) {
	path := filepath.Join(dir, File)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Sprintf("%s %v", path, errSymlink), nil
	}
	if err := tracked(ctx, dir); err != nil {
		return nil, fmt.Sprintf("%s %v", path, err), nil
	}
	data, err := fsutil.ReadRegularMax(path, ledger.MaxConfigBytes)
	var special *fsutil.NotRegularError
	var large *fsutil.TooLargeError
	if errors.As(err, &special) || errors.As(err, &large) {
		return nil, "", ledger.Errorf(ledger.ErrInvalid, "%v; hooks.json must be a file of settings", err)
	}
	if err != nil {
		return nil, "", err
	}
	var f struct {
		Hooks []Hook `json:"hooks"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, "", ledger.Errorf(ledger.ErrInvalid, "%s: %v; it should be {\"hooks\": [{\"on\": [\"complete\"], \"command\": [\"...\"]}]}", path, err)
	}
	for i := range f.Hooks {
		h := &f.Hooks[i]
		where := fmt.Sprintf("%s: hook %d (%s)", path, i+1, h.label())
		switch {
		case len(h.On) == 0:
			return nil, "", ledger.Errorf(ledger.ErrInvalid, "%s has no \"on\": name the ops it runs after (complete, claim, ...) or pre-complete", where)
		case (len(h.Command) > 0) == (h.URL != ""):
			return nil, "", ledger.Errorf(ledger.ErrInvalid, "%s needs exactly one of \"command\" (an argv list) or \"url\"", where)
		case h.URL != "" && slices.Contains(h.On, PreComplete):
			return nil, "", ledger.Errorf(ledger.ErrInvalid, "%s: a pre-complete validator must be a command, not a url", where)
		case h.URL != "" && !strings.HasPrefix(h.URL, "http://") && !strings.HasPrefix(h.URL, "https://"):
			return nil, "", ledger.Errorf(ledger.ErrInvalid, "%s: url must start with http:// or https://", where)
		}
		for _, op := range h.On {
			if op != PreComplete && op != "*" {
				if _, err := ledger.ParseOps(op); err != nil {
					return nil, "", ledger.Errorf(ledger.ErrInvalid, "%s: %v", where, err)
				}
			}
		}
		h.timeout = DefaultTimeout
		if h.Timeout != "" {
			d, err := time.ParseDuration(h.Timeout)
			if err != nil || d <= 0 {
				return nil, "", ledger.Errorf(ledger.ErrInvalid, "%s: timeout %q is not a positive duration (10s, 5m)", where, h.Timeout)
			}
			h.timeout = d
		}
	}
	return &Set{dir: dir, hooks: f.Hooks}, "", nil
}

// TrustEnv, set to 1, runs the hooks of a hooks.json outside any git
// repository, where bl cannot tell a file the user wrote from one that
// came with the files.
const TrustEnv = "BL_TRUST_HOOKS"

// errUnknownOrigin: outside a git repository (a tarball, git archive, a
// container build context) nothing says hooks.json is local.
var errUnknownOrigin = errors.New("is outside any git repository, so bl cannot tell whether it came with the files (a tarball, git archive, a build context); its hooks are ignored. If you wrote it, run with " + TrustEnv + "=1")

// tracked reports whether git tracks dir/hooks.json: nil when it does
// not, errTracked when it does, and an error when that cannot be told
// inside a repository (git missing, or refusing the repository, e.g. as
// owned by someone else) — then the file is not trusted either. Outside
// any git repository the file's origin is unknown: it is trusted only
// with TrustEnv set.
func tracked(ctx context.Context, dir string) error {
	if !inRepository(dir) {
		if os.Getenv(TrustEnv) == "1" {
			return nil
		}
		return errUnknownOrigin
	}
	is, err := gitdir.Tracked(ctx, dir, File)
	switch {
	case err != nil:
		return fmt.Errorf("could not be checked with %v; its hooks are ignored", err)
	case is:
		return errTracked
	}
	return nil
}

// inRepository reports whether dir or a directory above it holds .git.
func inRepository(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return true // let git tell
	}
	_, err = gitdir.Root(abs)
	return err == nil
}

// Has reports whether any hook fires on op.
func (s *Set) Has(op string) bool {
	if s == nil {
		return false
	}
	for i := range s.hooks {
		if s.hooks[i].fires(op) {
			return true
		}
	}
	return false
}

// Event is one durable event and its JSON (a bl watch --json line).
type Event struct {
	*ledger.Event
	JSON []byte
}

// After runs the hooks of each event, in event order then file order,
// each within its timeout, and returns one message per failure. Nothing it
// does affects the events, which are durable already.
func (s *Set) After(ctx context.Context, evs []Event) (failures []string) {
	if s == nil {
		return nil
	}
	for _, e := range evs {
		for i := range s.hooks {
			h := &s.hooks[i]
			if !h.fires(string(e.Op)) {
				continue
			}
			var err error
			if h.URL != "" {
				err = s.post(ctx, h, e)
			} else {
				_, err = s.run(ctx, h, e.JSON, s.env(h, e.Event))
			}
			if err != nil {
				failures = append(failures, fmt.Sprintf("hook %s after %s of %s failed: %v (the %s stands)", h.label(), e.Op, e.Card, err, e.Op))
			}
		}
	}
	return failures
}

func (s *Set) env(h *Hook, e *ledger.Event) []string {
	env := append(os.Environ(),
		InHookEnv+"=1",
		"BL_HOOK="+h.Name,
		"BL_OP="+string(e.Op),
		"BL_CARD="+e.Card,
		"BL_EVENT_ID="+e.ID,
		"BL_CURSOR="+ledger.CursorOf(e).String(),
		"BL_ACTOR="+e.Actor,
		"BL_OWNER="+e.Owner,
		"BL_EPOCH="+strconv.FormatInt(e.Epoch, 10),
		"BL_DIR="+s.dir,
	)
	return env
}

// run runs a command hook with stdin, bounded by its timeout. The error
// carries the end of its output.
func (s *Set) run(ctx context.Context, h *Hook, stdin []byte, env []string) (out []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Command[0], h.Command[1:]...)
	cmd.Dir = filepath.Dir(s.dir) // the repository, where scripts expect to run
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(append(append([]byte(nil), stdin...), '\n'))
	var buf tailBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = time.Second // a grandchild holding the pipes cannot hang us
	setProcessGroup(cmd)
	err = cmd.Run()
	out = bytes.TrimSpace(buf.Bytes())
	if ctx.Err() == context.DeadlineExceeded {
		return out, fmt.Errorf("timed out after %s%s", h.timeout, tail(out))
	}
	if err != nil {
		return out, fmt.Errorf("%v%s", err, tail(out))
	}
	return out, nil
}

func tail(out []byte) string {
	if len(out) == 0 {
		return ""
	}
	return ": " + string(out)
}

// tailBuffer keeps the last maxOutput bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > maxOutput {
		t.b = append(t.b[:0], t.b[len(t.b)-maxOutput:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte { return t.b }

func (s *Set) post(ctx context.Context, h *Hook, e Event) error {
	w := Webhook{URL: h.URL, Secret: h.Secret, Timeout: h.timeout, Retries: h.retries(), Event: string(e.Op), ID: e.ID}
	if s.Deliver == nil {
		return errors.New("this bl cannot post webhooks (install bl-git next to bl)")
	}
	return s.Deliver(ctx, w, e.JSON)
}

// Completion is what a pre-complete validator reads on stdin.
type Completion struct {
	Op     string          `json:"op"` // "complete"
	Card   json.RawMessage `json:"card"`
	Owner  string          `json:"owner,omitempty"`
	Epoch  int64           `json:"epoch,omitempty"`
	Note   string          `json:"note,omitempty"`
	Actor  string          `json:"actor"`
	CardID string          `json:"-"`
}

// Refused is a completion a validator refused. It matches
// ledger.ErrConflict (exit 4).
type Refused struct {
	Hook   string
	Card   string
	Reason string
}

func (r *Refused) Error() string {
	return fmt.Sprintf("pre-complete hook %s refused to complete %s: %s", r.Hook, r.Card, r.Reason)
}

// Unwrap makes errors.Is(err, ledger.ErrConflict) hold.
func (r *Refused) Unwrap() error { return ledger.ErrConflict }

// PreComplete runs the pre-complete validators in file order; the first
// that exits non-zero (or times out) refuses the completion.
func (s *Set) PreComplete(ctx context.Context, c Completion) error {
	if !s.Has(PreComplete) {
		return nil
	}
	c.Op = string(ledger.OpComplete)
	in, err := json.MarshalWithOption(c, json.DisableHTMLEscape())
	if err != nil {
		return err
	}
	env := append(os.Environ(), InHookEnv+"=1", "BL_OP=pre-complete", "BL_CARD="+c.CardID,
		"BL_ACTOR="+c.Actor, "BL_OWNER="+c.Owner, "BL_EPOCH="+strconv.FormatInt(c.Epoch, 10), "BL_DIR="+s.dir)
	for i := range s.hooks {
		h := &s.hooks[i]
		if !h.fires(PreComplete) {
			continue
		}
		out, err := s.run(ctx, h, in, append(env, "BL_HOOK="+h.Name))
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason := string(out)
		if reason == "" || strings.Contains(err.Error(), "timed out") {
			reason = err.Error()
		}
		return &Refused{Hook: h.label(), Card: c.CardID, Reason: reason}
	}
	return nil
}

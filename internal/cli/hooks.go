package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/bl-backlog/bl/hooks"
	"github.com/bl-backlog/bl/ledger"
)

// Hooks (package hooks) run after a command's events are durable, outside
// the lock, and never change its exit code; a pre-complete validator runs
// before bl complete takes the lock. A command that wrote nothing costs
// nothing; one that wrote costs one stat when there is no hooks.json.

// loadHooks reads .backlog/hooks.json, reporting a file it will not trust
// (and a hooks key in the tracked config.json) as a warning.
func (a *App) loadHooks(b *ledger.Backlog) (*hooks.Set, error) {
	if raw := b.Config().Hooks; len(raw) > 0 && string(raw) != "null" {
		a.warnOnce(fmt.Sprintf("%s/%s defines \"hooks\", which are ignored: config.json is tracked by git and a clone must not run code; put them in %s/%s (local, ignored by git)",
			b.Dir(), ledger.ConfigFile, b.Dir(), hooks.File))
	}
	s, warning, err := hooks.Load(a.ctx, b.Dir())
	if warning != "" {
		a.warnOnce(warning)
	}
	if s != nil {
		s.Deliver = a.ext.Deliver
		if s.Deliver == nil { // the lean bl
			s.Deliver = deliverViaBLGit
		}
	}
	return s, err
}

// warnOnce is Warn for what the hooks files are: one command loads them
// for each hook point it reaches (pre-complete, then complete), and says
// so once.
func (a *App) warnOnce(msg string) {
	if _, given := a.warnedOnce.LoadOrStore(msg, true); !given {
		a.Warn(msg)
	}
}

// runHooksAfter runs the hooks of the events this command wrote. Writes
// made by a hook do not fire hooks again.
func (a *App) runHooksAfter() {
	if a.getenv(hooks.InHookEnv) != "" {
		return
	}
	a.appendedMu.Lock()
	evs := a.appended
	a.appended = nil
	a.appendedMu.Unlock()
	a.RunHooks(evs)
}

// RunHooks runs the after-event hooks for evs, reporting failures as
// warnings. bl serve calls it after each write from the board.
func (a *App) RunHooks(evs []*ledger.Event) {
	if len(evs) == 0 || a.backlog == nil {
		return
	}
	s, err := a.loadHooks(a.backlog)
	if err != nil {
		a.Warn(fmt.Sprintf("hooks not run: %v", err))
		return
	}
	if s == nil {
		return
	}
	in := make([]hooks.Event, 0, len(evs))
	for _, e := range evs {
		line, err := AppendEventJSON(nil, e, nil)
		if err != nil {
			a.Warn(fmt.Sprintf("hooks not run for %s of %s: %v", e.Op, e.Card, err))
			continue
		}
		in = append(in, hooks.Event{Event: e, JSON: line})
	}
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	for _, msg := range s.After(ctx, in) {
		a.Warn(msg)
	}
}

// preComplete runs the pre-complete validators for a completion of id,
// before any lock is taken. A refusal is a conflict (exit 4).
func (a *App) preComplete(b *ledger.Backlog, id, owner string, epoch int64, note string) error {
	if a.getenv(hooks.InHookEnv) != "" {
		return nil // a hook completing a card does not run the validators again
	}
	s, err := a.loadHooks(b)
	if err != nil || !s.Has(hooks.PreComplete) {
		return err
	}
	card, err := b.Get(id)
	if err != nil {
		return nil // bl complete reports it, the same way without hooks
	}
	raw, _ := ledger.AppendCard(nil, &card)
	return s.PreComplete(a.ctx, hooks.Completion{Card: raw, CardID: id, Owner: owner, Epoch: epoch, Note: note, Actor: a.actor()})
}

// WebhookCmd delivers one webhook for the lean bl, which links no HTTP
// client: the body on stdin, the secret in BL_WEBHOOK_SECRET.
type WebhookCmd struct {
	URL     string        `required:""`
	Event   string        `required:""`
	ID      string        `required:""`
	Timeout time.Duration `default:"10s"`
	Retries int           `default:"2"`
}

// webhookSecretEnv passes a webhook's secret to bl-git off the command
// line, where other users could read it.
const webhookSecretEnv = "BL_WEBHOOK_SECRET"

func (c *WebhookCmd) gitWork(*App) string { return "a webhook" }

func (c *WebhookCmd) Run(a *App) error {
	if a.ext.Deliver == nil { // the lean bl
		return a.handover("a webhook")
	}
	body, err := io.ReadAll(io.LimitReader(a.stdin(), 1<<20))
	if err != nil {
		return err
	}
	return a.ext.Deliver(a.ctx, hooks.Webhook{URL: c.URL, Secret: a.getenv(webhookSecretEnv), Timeout: c.Timeout,
		Retries: c.Retries, Event: c.Event, ID: c.ID}, bytes.TrimRight(body, "\n"))
}

// deliverViaBLGit runs bl-git webhook for the lean bl.
func deliverViaBLGit(ctx context.Context, w hooks.Webhook, body []byte) error {
	path, err := findBLGit()
	if err != nil {
		return &gitMissingError{"a webhook", err.Error()}
	}
	cmd := exec.CommandContext(ctx, path, "webhook", "--json", "--url", w.URL, "--event", w.Event, "--id", w.ID,
		"--timeout", w.Timeout.String(), "--retries", strconv.Itoa(w.Retries))
	cmd.Env = append(os.Environ(), handedOverEnv+"=1", webhookSecretEnv+"="+w.Secret)
	cmd.Stdin = bytes.NewReader(body)
	cmd.WaitDelay = time.Second
	return runChild(cmd, "a webhook")
}

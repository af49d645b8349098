package cli

import (
	"io"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// ServeCmd serves the live board, the JSON API, the event stream and
// Prometheus metrics over HTTP (package serve). It runs in bl-git: the
// lean bl hands it over like the git commands, so the HTTP server and the
// metrics library never weigh on the hot commands' start-up.
type ServeCmd struct {
	Addr        string `default:"127.0.0.1:7788" placeholder:"HOST:PORT" help:"Address to listen on. Anything but loopback needs --token."`
	Token       string `env:"BL_SERVE_TOKEN" placeholder:"T" help:"Require this token on every request (bearer header, or the cookie set by the sign-in URL printed at start)."`
	AllowWrites bool   `name:"allow-writes" help:"Let the board block, unblock, reopen cards and change their priority (CSRF-protected)."`
}

func (ServeCmd) Help() string {
	return `Serves the backlog over HTTP until SIGINT or SIGTERM:

    /                 the live board (Server-Sent Events, no reload)
    /api/cards        cards, as bl list --json
    /api/cards/ID     one card, as bl show --json
    /api/stats        as bl stats --json
    /api/events       text/event-stream of bl watch --json; resumable with
                      Last-Event-ID or ?from=CURSOR
    /metrics          Prometheus text

It binds loopback by default and refuses any other address without
--token. Read-only unless --allow-writes. A config.json changed while it
runs holds from the next request on (one that does not read is named once
on stderr; the last good settings stay). See docs/SERVE.md.

Examples:

    bl serve
    bl serve --addr 0.0.0.0:7788 --token "$(openssl rand -hex 16)"` + exitCodesHelp
}

func (c *ServeCmd) gitWork(*App) string { return "bl serve" }

func (c *ServeCmd) Run(a *App) error {
	if a.ext.Serve == nil { // the lean bl
		return a.handover("bl serve")
	}
	return a.ext.Serve(a, c)
}

// OnSynced has the backlog App opens give fn the time of each append's
// fsync (bl serve's metrics). It must come before Open.
func (a *App) OnSynced(fn func(time.Duration)) { a.onSynced = fn }

// WriteJSON writes v as bl's --json output does: cards, a card or null
// through the card encoder, anything else indented, HTML escaping off.
func WriteJSON(w io.Writer, v any) error { return writeJSON(w, v) }

// AppendEventJSON appends e as one line of bl watch --json (or, with the
// conflict the fold recorded for it, of bl log --json), without the
// newline: the event led by its cursor.
func AppendEventJSON(dst []byte, e *ledger.Event, c *ledger.Conflict) ([]byte, error) {
	b, err := json.MarshalWithOption(newEventOut(e, c), json.DisableHTMLEscape())
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Package mcpserver is bl mcp: bl's commands as MCP tools over stdio, for
// agent runtimes. Each tool call runs the command line it stands for in
// this process, through one cli.Session (one open backlog for the whole
// server), so a tool takes the same arguments (the flags, in snake_case),
// makes the same checks, and answers with the same JSON as the command
// with --json. Only bl-git links this package and the MCP SDK.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bl-backlog/bl/internal/cli"
)

// Serve answers MCP requests on t until the client goes away or ctx ends.
func Serve(ctx context.Context, s *cli.Session, version string, t mcp.Transport) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bl", Title: "bl backlog", Version: version}, &mcp.ServerOptions{
		Instructions: instructions,
	})
	for _, tl := range tools {
		tl.add(srv, s)
	}
	return srv.Run(ctx, t)
}

// instructions tell the agent how the tools fit together.
const instructions = `bl is the backlog of this repository: cards to work on, with leases so
that agents never work on the same card. The loop: claim (with your owner
name and a ttl) → work, calling heartbeat before the ttl runs out and note
to record what you found → complete when done, fail when the attempt failed
(it is retried later), release to give it back untouched. Pass the epoch
that claim returned to heartbeat, note, complete, fail and release: a
"fenced" error means your lease is gone and someone else may hold the
card; stop working on it.`

// tool is one MCP tool: the bl command it runs and its arguments.
type tool struct {
	name, command, description string
	add                        func(srv *mcp.Server, s *cli.Session)
}

// newTool makes the tool name running command with arguments In.
func newTool[In any](name, command, description string) tool {
	t := tool{name: name, command: command, description: description}
	t.add = func(srv *mcp.Server, s *cli.Session) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: description},
			func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
				args, err := commandLine(command, &in)
				if err != nil {
					return nil, nil, err
				}
				stdout, stderr, exit := s.Exec(ctx, args...)
				if exit != 0 {
					obj := strings.TrimSpace(string(stderr))
					if !json.Valid([]byte(obj)) {
						b, _ := json.Marshal(map[string]any{"error": obj, "code": "error", "exit_code": exit})
						obj = string(b)
					}
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: obj}}}, json.RawMessage(obj), nil
				}
				// The SDK puts the structured content, and the same JSON as
				// text, into the result; only null, which is no structured
				// content, is written here.
				text := strings.TrimSpace(string(stdout))
				if text == "null" {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
				}
				return nil, json.RawMessage(text), nil
			})
	}
	return t
}

// The tools' arguments. Each field is the command's flag of the same name
// in snake_case (json tag); a field tagged bl:"arg" is the positional
// argument.
type (
	readyArgs struct {
		Phase string `json:"phase,omitempty" jsonschema:"only cards in this phase"`
		Label string `json:"label,omitempty" jsonschema:"only cards with this label"`
		Limit int    `json:"limit,omitempty" jsonschema:"at most this many (0 = all)"`
	}
	listArgs struct {
		Status []string `json:"status,omitempty" jsonschema:"only these statuses: ready, claimed, blocked, done"`
		Phase  string   `json:"phase,omitempty" jsonschema:"only this phase"`
		Label  string   `json:"label,omitempty" jsonschema:"only cards with this label"`
		Owner  string   `json:"owner,omitempty" jsonschema:"only cards claimed by this owner"`
		Ready  bool     `json:"ready,omitempty" jsonschema:"only cards claimable now"`
		Limit  int      `json:"limit,omitempty" jsonschema:"at most this many (0 = all)"`
		Sort   string   `json:"sort,omitempty" jsonschema:"claim (default), created, updated or id"`
	}
	showArgs struct {
		ID string `json:"id" bl:"arg" jsonschema:"the card id"`
	}
	createArgs struct {
		Title          string   `json:"title" jsonschema:"what the card is"`
		ID             string   `json:"id,omitempty" jsonschema:"card id (default: generated)"`
		Body           string   `json:"body,omitempty" jsonschema:"longer description"`
		Phase          string   `json:"phase,omitempty" jsonschema:"board lane"`
		Priority       int      `json:"priority,omitempty" jsonschema:"higher is sooner (default 0)"`
		DependsOn      []string `json:"depends_on,omitempty" jsonschema:"ids of cards this one waits for"`
		Parent         string   `json:"parent,omitempty" jsonschema:"parent card id"`
		Label          []string `json:"label,omitempty" jsonschema:"labels"`
		Acceptance     []string `json:"acceptance,omitempty" jsonschema:"acceptance criteria"`
		MaxAttempts    int      `json:"max_attempts,omitempty" jsonschema:"failed attempts allowed before the card is blocked (0 = unlimited)"`
		DeferUntil     string   `json:"defer_until,omitempty" jsonschema:"not claimable before this time (RFC 3339, date, or duration from now)"`
		IdempotencyKey string   `json:"idempotency_key,omitempty" jsonschema:"a repeat with the same key returns the existing card"`
		RequestID      string   `json:"request_id,omitempty" jsonschema:"makes the call safe to retry"`
	}
	claimArgs struct {
		Owner     string `json:"owner" jsonschema:"your owner name, the same on every call"`
		TTL       string `json:"ttl,omitempty" jsonschema:"lease length, a Go duration such as 10m (default 15m)"`
		ID        string `json:"id,omitempty" jsonschema:"claim this card, instead of the best one"`
		Phase     string `json:"phase,omitempty" jsonschema:"only cards in this phase"`
		Label     string `json:"label,omitempty" jsonschema:"only cards with this label"`
		Wait      string `json:"wait,omitempty" jsonschema:"when nothing is claimable, wait up to this long (e.g. 30s)"`
		RequestID string `json:"request_id,omitempty" jsonschema:"makes the call safe to retry"`
	}
	heartbeatArgs struct {
		ID         string `json:"id" jsonschema:"the card id"`
		Owner      string `json:"owner" jsonschema:"the lease owner"`
		Epoch      int64  `json:"epoch,omitempty" jsonschema:"the epoch claim returned"`
		TTL        string `json:"ttl,omitempty" jsonschema:"new lease length (default: keep)"`
		Progress   *int   `json:"progress,omitempty" jsonschema:"progress, 0-100"`
		Checkpoint string `json:"checkpoint,omitempty" jsonschema:"a small JSON document to resume from"`
		RequestID  string `json:"request_id,omitempty" jsonschema:"makes the call safe to retry"`
	}
	completeArgs struct {
		ID        string `json:"id" jsonschema:"the card id"`
		Owner     string `json:"owner,omitempty" jsonschema:"the lease owner (fences the call)"`
		Epoch     int64  `json:"epoch,omitempty" jsonschema:"the epoch claim returned"`
		Note      string `json:"note,omitempty" jsonschema:"closing note, e.g. the commit that did it"`
		RequestID string `json:"request_id,omitempty" jsonschema:"makes the call safe to retry"`
	}
	leaseArgs struct {
		ID        string `json:"id" jsonschema:"the card id"`
		Owner     string `json:"owner" jsonschema:"the lease owner"`
		Epoch     int64  `json:"epoch,omitempty" jsonschema:"the epoch claim returned"`
		Reason    string `json:"reason,omitempty" jsonschema:"why, for the next attempt"`
		RequestID string `json:"request_id,omitempty" jsonschema:"makes the call safe to retry"`
	}
	noteArgs struct {
		ID        string `json:"id" jsonschema:"the card id"`
		Text      string `json:"text" bl:"arg" jsonschema:"the note (at most 4 KiB)"`
		Owner     string `json:"owner,omitempty" jsonschema:"only as this lease owner (fences the call)"`
		Epoch     int64  `json:"epoch,omitempty" jsonschema:"with owner: only at this epoch"`
		RequestID string `json:"request_id,omitempty" jsonschema:"makes the call safe to retry"`
	}
	statsArgs struct{}
)

// tools is every tool bl mcp serves.
var tools = []tool{
	newTool[readyArgs]("ready", "ready", "Cards claimable now, in claim order."),
	newTool[listArgs]("list", "list", "List cards, filtered."),
	newTool[showArgs]("show", "show", "One card with its notes."),
	newTool[createArgs]("create", "create", "Add a card."),
	newTool[claimArgs]("claim", "claim", "Take a lease on the best claimable card (or the given one); null when none. Keep the epoch."),
	newTool[heartbeatArgs]("heartbeat", "heartbeat", "Renew your lease (before its ttl runs out) and report progress."),
	newTool[completeArgs]("complete", "complete", "Mark a card done."),
	newTool[leaseArgs]("fail", "fail", "Give your card back as failed: it is retried after a backoff, blocked after max_attempts."),
	newTool[leaseArgs]("release", "release", "Give your card back untouched."),
	newTool[noteArgs]("note", "note", "Add a note to a card's case file for whoever works on it next."),
	newTool[statsArgs]("stats", "stats", "Counts by status, claimable and expired cards, ledger size."),
}

// commandLine turns a tool's arguments into the command line they stand
// for: each set field as --flag=value (a list as the flag repeated), then
// the positional argument after --.
func commandLine(command string, in any) ([]string, error) {
	args := []string{command}
	var positional []string
	v := reflect.ValueOf(in).Elem()
	for i := range v.NumField() {
		f, val := v.Type().Field(i), v.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		flag := "--" + strings.ReplaceAll(name, "_", "-")
		if f.Tag.Get("bl") == "arg" {
			positional = append(positional, val.String())
			continue
		}
		switch val.Kind() {
		case reflect.String:
			if s := val.String(); s != "" {
				if command == "create" && name == "body" && s == "-" {
					return nil, fmt.Errorf(`body "-" would read standard input; give the text itself`)
				}
				args = append(args, flag+"="+s)
			}
		case reflect.Int, reflect.Int64:
			if n := val.Int(); n != 0 {
				args = append(args, flag+"="+strconv.FormatInt(n, 10))
			}
		case reflect.Bool:
			if val.Bool() {
				args = append(args, flag)
			}
		case reflect.Pointer:
			if !val.IsNil() {
				args = append(args, flag+"="+strconv.FormatInt(val.Elem().Int(), 10))
			}
		case reflect.Slice:
			for k := range val.Len() {
				args = append(args, flag+"="+val.Index(k).String())
			}
		}
	}
	if len(positional) > 0 {
		args = append(append(args, "--"), positional...)
	}
	return args, nil
}

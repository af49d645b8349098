package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bl-backlog/bl/internal/cli"
)

// The tools' arguments. Each field is the command's flag of the same name
// in snake_case (json tag); tags:
//
//	desc:"..."      the argument's description in the schema
//	mcp:"required"  the call is refused without it
//	mcp:"owner"     required, but defaults to the server's --owner
//	mcp:"epoch"     required, at least 1: the call is fenced
//	mcp:"arg"       the command's positional argument
//	mcp:"optarg"    a positional argument after the others, when given
//	mcp:"myowner"   optional; defaults to the server's --owner
//	mcp:"local"     read by the tool, not passed to the command
//	enum:"a,b"      the values allowed
type (
	readyArgs struct {
		Phase  string   `json:"phase,omitempty" desc:"only cards in this phase"`
		Label  string   `json:"label,omitempty" desc:"only cards with this label"`
		Owner  string   `json:"owner,omitempty" mcp:"myowner" desc:"whose claim to list for (default: the server's owner): cards assigned to anyone else are left out, as claim passes them over"`
		Any    bool     `json:"any,omitempty" desc:"also the cards assigned to someone else"`
		Mine   bool     `json:"mine,omitempty" desc:"only the cards assigned to the owner"`
		Limit  *int     `json:"limit,omitempty" mcp:"local" desc:"at most this many cards (default 20, at most 1000); more: true in the result says some were left out"`
		Fields []string `json:"fields,omitempty" mcp:"local" desc:"card fields to return (default: a brief set: id, title, status, state, priority, phase, labels, depends_on, assignee, claim_owner, claim_epoch, lease_expires_at); [\"all\"] for whole cards"`
	}
	listArgs struct {
		Status   []string `json:"status,omitempty" enum:"ready,claimed,review,blocked,done" desc:"only these statuses"`
		Phase    string   `json:"phase,omitempty" desc:"only this phase"`
		Label    string   `json:"label,omitempty" desc:"only cards with this label"`
		State    []string `json:"state,omitempty" enum:"ready,waiting,claimed,expired,review,blocked,done,claimable" desc:"only cards standing so (the state field of a card): waiting = ready but held back (dependencies, deferral, held paths), expired = a lease ran out, claimable = anyone may claim it now"`
		Owner    string   `json:"owner,omitempty" desc:"only cards claimed by this owner"`
		Assignee string   `json:"assignee,omitempty" desc:"only cards assigned to this name; \"-\" for the unassigned ones"`
		Ready    bool     `json:"ready,omitempty" desc:"only cards claimable now"`
		Sort     string   `json:"sort,omitempty" enum:"claim,created,updated,id" desc:"order (default claim: priority, age, id)"`
		Limit    *int     `json:"limit,omitempty" mcp:"local" desc:"at most this many cards (default 20, at most 1000); more: true in the result says some were left out"`
		Fields   []string `json:"fields,omitempty" mcp:"local" desc:"card fields to return (default: a brief set); [\"all\"] for whole cards"`
	}
	showArgs struct {
		ID string `json:"id" mcp:"arg" desc:"the card id"`
	}
	createArgs struct {
		Title          string   `json:"title" mcp:"required" desc:"what the card is, one line"`
		ID             string   `json:"id,omitempty" desc:"card id (default: generated)"`
		Body           string   `json:"body,omitempty" desc:"longer description: context, pointers, how to verify"`
		Phase          string   `json:"phase,omitempty" desc:"board lane"`
		Priority       int      `json:"priority,omitempty" desc:"an integer, higher is sooner (default 0)"`
		DependsOn      []string `json:"depends_on,omitempty" desc:"ids of cards this one waits for"`
		Parent         string   `json:"parent,omitempty" desc:"parent card id"`
		Label          []string `json:"label,omitempty" desc:"labels"`
		Acceptance     []string `json:"acceptance,omitempty" desc:"acceptance criteria"`
		MaxAttempts    int      `json:"max_attempts,omitempty" desc:"failed attempts allowed before the card is blocked (0 = unlimited)"`
		DeferUntil     string   `json:"defer_until,omitempty" desc:"not claimable before this time (RFC 3339, date, or duration from now)"`
		IdempotencyKey string   `json:"idempotency_key,omitempty" desc:"a repeat with the same key returns the existing card"`
		Assignee       string   `json:"assignee,omitempty" desc:"who the card is planned for (see assign)"`
		RequestID      string   `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	updateArgs struct {
		ID          string   `json:"id" mcp:"required" desc:"the card id"`
		Title       *string  `json:"title,omitempty" desc:"new title"`
		Body        *string  `json:"body,omitempty" desc:"new body"`
		Phase       *string  `json:"phase,omitempty" desc:"new phase (\"\" clears it)"`
		Priority    *int     `json:"priority,omitempty" desc:"new priority"`
		Label       []string `json:"label,omitempty" desc:"replace the labels"`
		ClearLabels bool     `json:"clear_labels,omitempty" desc:"remove all labels"`
		Acceptance  []string `json:"acceptance,omitempty" desc:"replace the acceptance criteria"`
		Parent      *string  `json:"parent,omitempty" desc:"new parent (\"\" clears it)"`
		MaxAttempts *int     `json:"max_attempts,omitempty" desc:"new attempts limit (0 = unlimited)"`
		DeferUntil  *string  `json:"defer_until,omitempty" desc:"not claimable before this time (\"\" clears it)"`
		Assignee    *string  `json:"assignee,omitempty" desc:"who the card is planned for (\"\" clears it)"`
		RequestID   string   `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	assignArgs struct {
		ID        string `json:"id" mcp:"arg" desc:"the card id"`
		Assignee  string `json:"assignee,omitempty" mcp:"optarg" desc:"who the card is planned for; omit it with clear: true to assign the card to nobody"`
		Clear     bool   `json:"clear,omitempty" desc:"assign the card to nobody"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	cardArgs struct {
		ID        string `json:"id" mcp:"arg" desc:"the card id"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	claimArgs struct {
		Owner     string `json:"owner,omitempty" mcp:"owner" desc:"your owner name, the same on every call of the session"`
		Review    bool   `json:"review,omitempty" desc:"claim the best card waiting for review instead (one you did not send to review); then approve or reject it with the epoch returned"`
		TTL       string `json:"ttl,omitempty" desc:"lease length, a duration such as 10m (default 15m); heartbeat every ttl/3"`
		ID        string `json:"id,omitempty" desc:"claim this card, instead of the best one"`
		Phase     string `json:"phase,omitempty" desc:"only cards in this phase"`
		Label     string `json:"label,omitempty" desc:"only cards with this label"`
		Any       bool   `json:"any,omitempty" desc:"also cards assigned to someone else, which a claim passes over by default"`
		Mine      bool   `json:"mine,omitempty" desc:"only cards assigned to you"`
		Wait      string `json:"wait,omitempty" desc:"when nothing is claimable, wait up to this long for a card (e.g. 30s); progress notifications are sent while waiting"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry: a repeat returns the same claim"`
	}
	heartbeatArgs struct {
		ID         string `json:"id" mcp:"required" desc:"the card id"`
		Owner      string `json:"owner,omitempty" mcp:"owner" desc:"the owner you claimed as"`
		Epoch      int64  `json:"epoch" mcp:"epoch" desc:"the claim_epoch claim returned"`
		TTL        string `json:"ttl,omitempty" desc:"new lease length (default: keep)"`
		Progress   *int   `json:"progress,omitempty" desc:"progress, 0-100"`
		Checkpoint string `json:"checkpoint,omitempty" desc:"a small JSON document to resume from"`
		RequestID  string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	completeArgs struct {
		ID        string `json:"id" mcp:"required" desc:"the card id"`
		Owner     string `json:"owner,omitempty" mcp:"owner" desc:"the owner you claimed as"`
		Epoch     int64  `json:"epoch" mcp:"epoch" desc:"the claim_epoch claim returned"`
		Note      string `json:"note,omitempty" desc:"closing note: what was done, e.g. the commit"`
		Review    bool   `json:"review,omitempty" desc:"send the card to review instead of done: a reviewer approves or rejects it (also when the backlog requires review)"`
		Commit    string `json:"commit,omitempty" desc:"the commit that holds the work"`
		Branch    string `json:"branch,omitempty" desc:"the branch that holds the work"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	leaseArgs struct {
		ID        string `json:"id" mcp:"required" desc:"the card id"`
		Owner     string `json:"owner,omitempty" mcp:"owner" desc:"the owner you claimed as"`
		Epoch     int64  `json:"epoch" mcp:"epoch" desc:"the claim_epoch claim returned"`
		Reason    string `json:"reason,omitempty" desc:"why, for whoever takes the card next"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	noteArgs struct {
		ID        string `json:"id" mcp:"required" desc:"the card id"`
		Text      string `json:"text" mcp:"arg" desc:"the note (at most 4 KiB)"`
		Owner     string `json:"owner,omitempty" desc:"on a card you hold: the owner you claimed as (default: the server's owner)"`
		Epoch     int64  `json:"epoch,omitempty" desc:"on a card you hold: the claim_epoch claim returned (required on a claimed card)"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	blockArgs struct {
		ID        string `json:"id" mcp:"required" desc:"the card id"`
		Reason    string `json:"reason" mcp:"required" desc:"what it waits for, for whoever unblocks it"`
		Owner     string `json:"owner,omitempty" desc:"on a card you hold: the owner you claimed as (default: the server's owner)"`
		Epoch     int64  `json:"epoch,omitempty" desc:"on a card you hold: the claim_epoch claim returned (required on a claimed card)"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	linkArgs struct {
		From      string `json:"from" mcp:"required" desc:"the card the link is on (the one held back, for a blocking type)"`
		To        string `json:"to" mcp:"required" desc:"the card at the other end"`
		Type      string `json:"type,omitempty" enum:"blocks,supersedes,duplicates,discovered-from,related" desc:"blocks (default): from waits until to is done; supersedes and duplicates also hold from back while to is open; discovered-from and related only record the relation"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	searchArgs struct {
		Text   string   `json:"text" mcp:"arg" desc:"the words to look for: every one must be found, in any case, in the id, title, labels, acceptance, body or notes"`
		Limit  *int     `json:"limit,omitempty" mcp:"local" desc:"at most this many cards (default 20, at most 1000); more: true in the result says some were left out"`
		Fields []string `json:"fields,omitempty" mcp:"local" desc:"card fields to return (default: a brief set); [\"all\"] for whole cards"`
	}
	approveArgs struct {
		ID        string `json:"id" mcp:"arg" desc:"the card id"`
		Owner     string `json:"owner,omitempty" mcp:"owner" desc:"the reviewer holding the review lease (claim with review: true)"`
		Epoch     int64  `json:"epoch" mcp:"epoch" desc:"the claim_epoch the review claim returned"`
		Note      string `json:"note,omitempty" desc:"a closing note"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	rejectArgs struct {
		ID        string `json:"id" mcp:"arg" desc:"the card id"`
		Reason    string `json:"reason" mcp:"required" desc:"why the work is not accepted; kept on the card for the next worker"`
		Owner     string `json:"owner,omitempty" mcp:"owner" desc:"the reviewer holding the review lease (claim with review: true)"`
		Epoch     int64  `json:"epoch" mcp:"epoch" desc:"the claim_epoch the review claim returned"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	handoffArgs struct {
		ID        string `json:"id" mcp:"arg" desc:"the card id"`
		Owner     string `json:"owner,omitempty" mcp:"owner" desc:"the owner you claimed as"`
		Epoch     int64  `json:"epoch" mcp:"epoch" desc:"the claim_epoch claim returned"`
		To        string `json:"to" mcp:"required" desc:"the owner who takes the card over"`
		TTL       string `json:"ttl,omitempty" desc:"the new owner's lease (default: the lease's own length)"`
		RequestID string `json:"request_id,omitempty" desc:"makes the call safe to retry"`
	}
	logArgs struct {
		ID    string `json:"id" mcp:"required" desc:"the card id"`
		Limit *int   `json:"limit,omitempty" mcp:"local" desc:"the newest this many events (default 50, at most 1000)"`
	}
	statsArgs struct{}
)

var (
	yes = true
	no  = false
)

// Annotations: reads are read-only; a call that ends a card's lease or
// state is destructive; idempotent where a repeat changes nothing more.
var (
	readOnly    = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}
	additive    = &mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no}
	idempotent  = &mcp.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no}
	destructive = &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no}
	overwrites  = &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no}
)

// tools is every tool bl mcp serves.
var tools = []tool{
	newTool[claimArgs]("claim", "claim", additive, "",
		`Get your next task: atomically takes a lease on the best claimable card (highest priority, oldest) and returns it, or the card named by id. Cards assigned to someone else are passed over (any: true takes them too; mine: true takes only yours). Call this, not ready or list, when you need work. Returns null when nothing is claimable (pass wait, e.g. "60s", to wait for one). Keep the card's id and claim_epoch: heartbeat, note, complete, fail and release need them. Heartbeat every ttl/3 (ttl defaults to 15m, so every 5m) or the lease runs out and the card goes to someone else.`),
	newTool[heartbeatArgs]("heartbeat", "heartbeat", idempotent, "",
		`Renew your lease on a card you claimed; call it every ttl/3 while you work, and report progress (0-100). An error with code "fenced" means your lease is gone (it expired or someone else holds the card): stop working on the card, discard your uncommitted changes for it, and claim again.`),
	newTool[completeArgs]("complete", "complete", destructive, "",
		`Mark the card you claimed done, with a closing note (what was done, the commit). Needs the epoch claim returned; a "fenced" error means your lease is gone: your work was not recorded, do not retry it blindly, claim again.`),
	newTool[leaseArgs]("fail", "fail", destructive, "",
		`Give the card you claimed back as failed, with the reason: it is retried after a backoff (by you or another agent), and blocked once its max_attempts are used. Use it when the attempt did not work; use release when you did not start. Needs the epoch claim returned.`),
	newTool[leaseArgs]("release", "release", destructive, "",
		`Give the card you claimed back untouched, to the pool, with a reason. Needs the epoch claim returned.`),
	newTool[noteArgs]("note", "note", additive, "",
		`Add a note to a card's case file (shown by show and to the next agent): what you found, what you tried, what is left. On a card you hold pass epoch (and owner) as claim returned.`),
	newTool[readyArgs]("ready", "ready", readOnly, "cards",
		`Look at the cards claimable now, in claim order (read only: it takes nothing; call claim to get work). Returns {"cards": [...], "more": bool}, brief cards by default.`),
	newTool[listArgs]("list", "list", readOnly, "cards",
		`List cards, filtered by status, state, phase, label, owner or assignee (read only). Returns {"cards": [...], "more": bool}, brief cards by default; call show for one whole card.`),
	newTool[showArgs]("show", "show", readOnly, "",
		`One whole card: body, acceptance criteria, notes, lease, attempts.`),
	newTool[logArgs]("log", "log", readOnly, "events",
		`A card's history, newest last: who created, claimed, noted, failed and completed it, and why. Returns {"events": [...], "more": bool}.`),
	newTool[createArgs]("create", "create", additive, "",
		`Add a card to the backlog: work you found that is out of scope for your card, or a split of it. Give it a clear title, a body with the context, and depends_on for what must be done first.`),
	newTool[updateArgs]("update", "update", overwrites, "",
		`Edit a card's fields (title, body, phase, priority, labels, acceptance, parent, max_attempts, defer_until, assignee); only the fields given change.`),
	newTool[assignArgs]("assign", "assign", overwrites, "",
		`Plan a card for someone (its assignee), or for nobody with clear: true. It takes no lease and changes no status: a claim by anyone else passes the card over (unless it asks for any), the assignee's claim takes it.`),
	newTool[cardArgs]("unblock", "unblock", idempotent, "",
		`Return a blocked card to ready (a card blocked for using all its attempts gets a fresh budget).`),
	newTool[cardArgs]("reopen", "reopen", idempotent, "",
		`Return a done card to ready, for work that turned out unfinished.`),
	newTool[blockArgs]("block", "block", destructive, "",
		`Block a card that cannot go on (a missing decision, access, an outside fix), with the reason; it is not claimable until unblocked. On a card you hold pass epoch as claim returned: your lease ends.`),
	newTool[linkArgs]("link", "link", idempotent, "",
		`Record that card "from" depends on card "to": from is not claimable until to is done. A cycle is refused.`),
	newTool[searchArgs]("search", "search", readOnly, "cards",
		`Find cards by words (any case) in their id, title, labels, acceptance, body or notes; id and title matches first. Read only. Returns {"cards": [...], "more": bool}.`),
	newTool[approveArgs]("approve", "approve", destructive, "",
		`Approve a card in review: it is done, and cards that depend on it go on. Claim it first with claim and review: true, and pass the epoch that returned; you may not approve or reject a card you sent to review yourself, by this server's actor or by the owner you worked as (error code self_review: your work stands; another reviewer decides it).`),
	newTool[rejectArgs]("reject", "reject", destructive, "",
		`Reject a card in review: it goes back to ready with your reason kept on it for the next worker. Claim it first with claim and review: true, and pass the epoch that returned.`),
	newTool[handoffArgs]("handoff", "handoff", destructive, "",
		`Pass a card you hold to another owner in one step: they hold it at the next epoch with progress, checkpoint and notes kept; you are fenced from then on (stop working on it).`),
	newTool[statsArgs]("stats", "stats", readOnly, "",
		`Counts by status, claimable and expired cards, ledger size.`),
}

// outputSchema is what a tool's structured content holds: the list (list
// names its key), one card, or stats; or, for every tool, the error
// object (isError results are checked against the schema too). claim has
// none: when nothing is claimable it answers null, which structured
// content (always an object) cannot carry.
func outputSchema(name, list string) map[string]any {
	str := map[string]any{"type": "string"}
	integer := map[string]any{"type": "integer"}
	props := map[string]any{"error": str, "code": str, "exit_code": integer, "hint": str}
	isError := map[string]any{"required": []string{"error", "code", "exit_code", "hint"}}
	var result map[string]any
	switch {
	case name == "claim":
		return nil
	case list != "":
		props[list] = map[string]any{"type": "array", "items": map[string]any{"type": "object"}}
		props["more"] = map[string]any{"type": "boolean", "description": "some were left out: raise limit or narrow the filter"}
		result = map[string]any{"required": []string{list, "more"}}
	case name == "stats":
		props["cards"] = integer
		props["by_status"] = map[string]any{"type": "object"}
		result = map[string]any{"required": []string{"cards"}}
	default:
		strs := map[string]any{"type": "array", "items": str}
		stamp := map[string]any{"type": "string", "format": "date-time"}
		for k, v := range map[string]any{
			"id": str, "title": str, "body": str, "phase": str, "labels": strs, "priority": integer,
			"status":     map[string]any{"type": "string", "enum": []string{"ready", "claimed", "review", "blocked", "done"}},
			"depends_on": strs, "parent": str, "acceptance": strs, "assignee": str,
			"claim_owner": str, "claim_epoch": integer, "lease_expires_at": stamp,
			"attempts": integer, "created_at": stamp, "updated_at": stamp, "closed_at": stamp, "version": integer,
			"state": str, "claimable": map[string]any{"type": "boolean"}, "waiting_on": strs,
		} {
			props[k] = v
		}
		result = map[string]any{"required": []string{"id", "title", "status", "priority", "created_at", "updated_at", "version"}}
	}
	return map[string]any{"type": "object", "properties": props, "anyOf": []any{result, isError}}
}

// tool is one MCP tool: the bl command it runs and its arguments.
type tool struct {
	name string
	add  func(ctx context.Context, srv *mcp.Server, s *cli.Session)
}

// newTool makes the tool name running command with arguments In. list
// names the key a list result is wrapped in (an MCP result is an object).
func newTool[In any](name, command string, ann *mcp.ToolAnnotations, list, description string) tool {
	t := tool{name: name}
	t.add = func(gone context.Context, srv *mcp.Server, s *cli.Session) {
		def := &mcp.Tool{Name: name, Description: description, Annotations: ann,
			InputSchema: inputSchema[In](s.Owner != "")}
		if out := outputSchema(name, list); out != nil {
			def.OutputSchema = out
		}
		srv.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The call ends with its request (notifications/cancelled); a
			// claim that waits also ends when the client goes away.
			var in In
			if e := decodeArgs(req.Params.Arguments, &in, s.Owner); e != nil {
				return errorResult(*e), nil
			}
			c := call{s: s, ctx: ctx, req: req, command: command, list: list}
			if a, ok := any(&in).(*claimArgs); ok && a.Wait != "" {
				return c.claimWaiting(gone, a), nil
			}
			return c.run(&in), nil
		})
	}
	return t
}

// claimWaiting runs a claim that waits. The client going away ends the
// wait, not the claim: a wait it cut short (before or after the first
// try) ends with one more try without waiting, so a claim piped in just
// before stdin ends takes a claimable card.
func (c call) claimWaiting(gone context.Context, a *claimArgs) *mcp.CallToolResult {
	waitCtx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	defer context.AfterFunc(gone, cancel)()
	w := c
	w.ctx = waitCtx
	r := w.run(a)
	if gone.Err() == nil || c.ctx.Err() != nil || !isNull(r) {
		return r
	}
	once := *a
	once.Wait = "0s"
	return c.run(&once)
}

// isNull reports whether r is a claim's "nothing claimable".
func isNull(r *mcp.CallToolResult) bool {
	if r.IsError || r.StructuredContent != nil || len(r.Content) != 1 {
		return false
	}
	t, ok := r.Content[0].(*mcp.TextContent)
	return ok && t.Text == "null"
}

// call is one tool call being run.
type call struct {
	s       *cli.Session
	ctx     context.Context
	req     *mcp.CallToolRequest
	command string
	list    string
}

func (c call) run(in any) *mcp.CallToolResult {
	if e := c.fence(in); e != nil {
		return errorResult(*e)
	}
	args := commandLine(c.command, in)
	limit, fields := listOptions(in)
	if c.list != "" {
		// One more than asked, to tell whether more were left out; a
		// flag, so before the positional arguments' "--".
		args = slices.Insert(args, 1, fmt.Sprintf("--limit=%d", limit+1))
	}
	if a, ok := in.(*claimArgs); ok && a.Wait != "" {
		if token := c.req.Params.GetProgressToken(); token != nil {
			defer c.progress(token, a.Wait)()
		}
	}
	stdout, stderr, exit := c.s.Exec(c.ctx, args...)
	if exit != 0 {
		return errorResult(cliError(stderr, exit))
	}
	text := bytes.TrimSpace(stdout)
	if string(text) == "null" {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "null"}}}
	}
	if c.list != "" {
		var err error
		if text, err = wrapList(text, c.list, limit, fields); err != nil {
			return errorResult(errorObject{Error: "bl printed what is not a list: " + err.Error(), Code: "error", ExitCode: 1, Hint: hintFor("error")})
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: json.RawMessage(text)}
}

// fence applies the rule an agent must not be one omitted argument away
// from an unfenced write: a note or block on a claimed card takes the
// epoch (with the owner defaulting to the server's).
func (c call) fence(in any) *errorObject {
	var id, owner *string
	var epoch *int64
	switch a := in.(type) {
	case *noteArgs:
		id, owner, epoch = &a.ID, &a.Owner, &a.Epoch
	case *blockArgs:
		id, owner, epoch = &a.ID, &a.Owner, &a.Epoch
	default:
		return nil
	}
	if *epoch != 0 || *owner != "" {
		if *owner == "" {
			*owner = c.s.Owner
		}
		if *owner == "" || *epoch < 1 {
			e := usageError("owner and epoch go together: pass both as claim returned them")
			return &e
		}
		return nil
	}
	stdout, _, exit := c.s.Exec(c.ctx, "show", "--", *id)
	if exit != 0 {
		return nil // the command itself reports a missing card
	}
	var card struct {
		Status string `json:"status"`
		Owner  string `json:"claim_owner"`
	}
	if json.Unmarshal(stdout, &card) == nil && card.Status == "claimed" {
		e := usageError(fmt.Sprintf("card %s is claimed (by %s): pass owner and epoch as claim returned them", *id, card.Owner))
		e.Hint = "only the lease holder writes to a claimed card; if it is not yours, leave it alone"
		return &e
	}
	return nil
}

// progressEvery is how often a waiting claim reports progress.
var progressEvery = time.Second

// progress sends notifications/progress while a claim waits; the
// returned function stops it.
func (c call) progress(token any, wait string) (stop func()) {
	total, _ := time.ParseDuration(wait)
	done := make(chan struct{})
	go func() {
		start := time.Now()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-c.ctx.Done():
				return
			case now := <-t.C:
				waited := now.Sub(start).Round(time.Second)
				_ = c.req.Session.NotifyProgress(c.ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: waited.Seconds(), Total: total.Seconds(),
					Message: fmt.Sprintf("waiting for a claimable card (%s of %s)", waited, total)})
			}
		}
	}()
	return func() { close(done) }
}

// listOptions are a list tool's limit and fields (zero for other tools).
func listOptions(in any) (limit int, fields []string) {
	var l *int
	switch a := in.(type) {
	case *readyArgs:
		l, fields, limit = a.Limit, a.Fields, 20
	case *listArgs:
		l, fields, limit = a.Limit, a.Fields, 20
	case *searchArgs:
		l, fields, limit = a.Limit, a.Fields, 20
	case *logArgs:
		l, limit = a.Limit, 50
	}
	if l != nil {
		limit = *l
	}
	return limit, fields
}

// briefFields are the card fields a list returns by default: enough to
// choose a card, not so much that a long list floods a context window.
var briefFields = []string{"id", "title", "status", "state", "priority", "phase", "labels", "depends_on",
	"assignee", "claim_owner", "claim_epoch", "lease_expires_at"}

// wrapList turns the array the command printed (limit+1 long at most) into
// {key: [...], "more": bool}, each element cut to fields.
func wrapList(text []byte, key string, limit int, fields []string) ([]byte, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(text, &elems); err != nil {
		return nil, err
	}
	more := len(elems) > limit
	switch {
	case more && key == "events": // log --limit N+1 gives the newest N+1: drop the oldest
		elems = elems[len(elems)-limit:]
	case more:
		elems = elems[:limit]
	}
	if key == "cards" && !(len(fields) == 1 && fields[0] == "all") {
		if len(fields) == 0 {
			fields = briefFields
		}
		for i, e := range elems {
			p, err := project(e, fields)
			if err != nil {
				return nil, err
			}
			elems[i] = p
		}
	}
	if elems == nil {
		elems = []json.RawMessage{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{key: elems, "more": more}); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// project keeps fields of a card object, in the order asked.
func project(card json.RawMessage, fields []string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(card, &m); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range fields {
		v, ok := m[f]
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
		n++
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// errorObject is the one shape of every tool error.
type errorObject struct {
	Error    string `json:"error"`
	Code     string `json:"code"`
	ExitCode int    `json:"exit_code"`
	Hint     string `json:"hint"`
}

func usageError(msg string) errorObject {
	return errorObject{Error: msg, Code: "usage", ExitCode: 2, Hint: hintFor("usage")}
}

func errorResult(e errorObject) *mcp.CallToolResult {
	b, _ := json.Marshal(e)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// cliError is the command's --json error object in the tool's words:
// flags named as the tool's arguments, no pointers to --help.
func cliError(stderr []byte, exit int) errorObject {
	var e errorObject
	// The error object is the last line; warnings come before it.
	lines := bytes.Split(bytes.TrimSpace(stderr), []byte("\n"))
	if json.Unmarshal(lines[len(lines)-1], &e) != nil || e.Code == "" {
		e = errorObject{Error: strings.TrimSpace(string(stderr)), Code: "error"}
	}
	e.ExitCode = exit
	e.Error = toolWords(e.Error)
	e.Hint = toolWords(e.Hint)
	if e.Hint == "" || e.Code == "not_found" { // the tools' words, not the commands'
		e.Hint = hintFor(e.Code)
	}
	return e
}

var (
	seeHelp  = regexp.MustCompile(`\s*\(see bl [a-z -]*--help\)`)
	flagName = regexp.MustCompile(`--([a-z][a-z-]*[a-z])`)
)

// toolWords rewrites command-line wording for a tool caller.
func toolWords(s string) string {
	s = seeHelp.ReplaceAllString(s, "")
	return flagName.ReplaceAllStringFunc(s, func(f string) string {
		return strings.ReplaceAll(strings.TrimPrefix(f, "--"), "-", "_")
	})
}

// hintFor is the next step for an error code the command gave no hint for.
func hintFor(code string) string {
	switch code {
	case "usage", "invalid":
		return "fix the arguments as the tool's input schema and description say, and call again"
	case "not_found":
		return "check the card id: search finds a card by words of its title; list or ready show the ids"
	case "conflict":
		return "the card is not in a state that allows this; show it to see where it stands"
	case "interrupted":
		return "the call was cancelled before it changed anything"
	}
	return "the backlog is unchanged unless the error says otherwise; see the error"
}

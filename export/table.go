package export

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// CSVHeader is the first row of the csv export: the card fields, named as
// in the JSON.
var CSVHeader = []string{
	"id", "title", "status", "priority", "phase", "labels", "depends_on", "parent", "acceptance",
	"claim_owner", "claim_epoch", "claimed_at", "claim_ttl_seconds", "lease_expires_at", "last_heartbeat_at",
	"attempts", "max_attempts", "defer_until", "blocked_reason", "closed_at", "close_note",
	"progress", "checkpoint", "idempotency_key", "created_at", "updated_at", "version", "body",
}

// csvListSep joins the entries of a list field inside one cell: one entry
// per line, which a spreadsheet shows as a list in the cell.
const csvListSep = "\n"

// RenderCSV writes one RFC 4180 record per card, in claim order, after the
// header row CSVHeader: CRLF line ends, fields quoted when they hold a comma,
// quote or line break. List fields hold one entry per line (an entry's own
// line breaks become spaces). Times are UTC RFC 3339 to the second; empty
// cells mean unset. A text cell that starts with = + - or @ gets a leading
// apostrophe so spreadsheets show it instead of evaluating it as a formula.
// Text is Printable: a control character in a field (a teammate's older bl
// let them into labels and phases) is not written, as on the terminal;
// names (phase, labels, owner) are shown as Name shows them.
func RenderCSV(cards []ledger.Card, o Options) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = true
	_ = w.Write(CSVHeader)
	for _, c := range sorted(cards) {
		progress := ""
		if c.Progress != nil {
			progress = strconv.Itoa(*c.Progress)
		}
		ttl := ""
		if c.ClaimTTLSeconds != 0 {
			ttl = strconv.FormatInt(c.ClaimTTLSeconds, 10)
		}
		_ = w.Write([]string{
			c.ID, cell(c.Title), cell(string(c.Status)), strconv.Itoa(c.Priority), cell(Name(c.Phase)),
			cellNames(c.Labels), cellList(c.DependsOn), c.Parent, cellList(c.Acceptance),
			cell(Name(c.ClaimOwner)), strconv.FormatInt(c.ClaimEpoch, 10), stamp(c.ClaimedAt), ttl,
			stamp(c.LeaseExpiresAt), stamp(c.LastHeartbeatAt),
			strconv.Itoa(c.Attempts), strconv.Itoa(c.MaxAttempts), stamp(c.DeferUntil),
			cell(c.BlockedReason), stamp(c.ClosedAt), cell(c.CloseNote),
			progress, cell(string(c.Checkpoint)), cell(c.IdempotencyKey),
			stamp(&c.CreatedAt), stamp(&c.UpdatedAt), strconv.FormatInt(c.Version, 10), cell(c.Body),
		})
	}
	w.Flush()
	return buf.Bytes()
}

// cell is s as a text cell: Printable, and defused when a spreadsheet
// would run it as a formula.
func cell(s string) string {
	s = Printable(s)
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// cellNames is a list of names (labels) as Name shows them.
func cellNames(list []string) string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = cell(Name(v))
	}
	return strings.Join(out, csvListSep)
}

func cellList(list []string) string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = cell(oneLine(v))
	}
	return strings.Join(out, csvListSep)
}

// RenderJSON writes the cards as one JSON array in claim order, indented
// two spaces, with the field names of the card contract ([] when empty).
// It fails only when a card's checkpoint is not valid JSON.
func RenderJSON(cards []ledger.Card, o Options) ([]byte, error) {
	b, err := json.MarshalIndentWithOption(sorted(cards), "", "  ", json.DisableHTMLEscape())
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// RenderJSONL writes one compact JSON card per line, in claim order.
func RenderJSONL(cards []ledger.Card, o Options) ([]byte, error) {
	var buf bytes.Buffer
	for _, c := range sorted(cards) {
		b, err := json.MarshalWithOption(c, json.DisableHTMLEscape())
		if err != nil {
			return nil, fmt.Errorf("card %s: %w", c.ID, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

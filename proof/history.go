package proof

import (
	"bytes"
	"fmt"
	"time"

	json "github.com/goccy/go-json"
)

// Call is one bl process run by a harness: what was asked, when, and what
// came back. Retries of one request share its RequestID.
type Call struct {
	Worker    string   // the agent that ran it
	Op        string   // the bl command: claim, heartbeat, complete, release, create, list, ...
	Card      string   // --id, when given
	Owner     string   // --owner, when given
	Epoch     int64    // --epoch, when given
	RequestID string   // --request-id, when given
	Args      []string // the full argument list

	Start time.Time // just before the process was started
	End   time.Time // just after it was reaped

	Exit    int  // exit code; -1 when the process died of a signal
	Stopped bool // it was SIGSTOPped (and later continued) while running

	Stdout []byte
	Stderr []byte
}

// Killed reports whether the process died of a signal, so its outcome is
// unknown to the caller.
func (c *Call) Killed() bool { return c.Exit < 0 }

// History is what Check judges: every call of a run and the ledger it left.
type History struct {
	Calls  []Call
	Ledger []byte // the final contents of ledger.jsonl

	// Cards are the cards the workload created. With AllDone set the
	// workload ran until every one of them was done, so each must have been
	// completed exactly once.
	Cards   []string
	AllDone bool
}

// outCard is the part of a printed card Check reads.
type outCard struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	ClaimOwner     string     `json:"claim_owner"`
	ClaimEpoch     int64      `json:"claim_epoch"`
	ClaimedAt      *time.Time `json:"claimed_at"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
}

// outError is the JSON error object bl prints on stderr under --json.
type outError struct {
	Error    string `json:"error"`
	Code     string `json:"code"`
	ExitCode int    `json:"exit_code"`
}

// ErrorCode returns the "code" of the JSON error a call printed, or "".
func (c *Call) ErrorCode() string {
	var e outError
	if json.Unmarshal(bytes.TrimSpace(c.Stderr), &e) != nil {
		return ""
	}
	return e.Code
}

// parseOut decodes the card (or null) a mutation printed under --json.
func parseOut(b []byte) (*outCard, error) {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	var c outCard
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	if c.ID == "" {
		return nil, fmt.Errorf("no card id")
	}
	return &c, nil
}

package ledger

import (
	"bytes"
	"time"

	json "github.com/goccy/go-json"
)

// decodeSnapshotLine decodes a snapshot line after the header, one that
// passed checkFrame: the object with its crc member, without the newline.
//
// Card, receipt and conflict lines in the shape encodeFramed writes them are
// read by decodeSnapshotFast; any other line goes to the JSON decoder, which
// gives the same value for every line decodeSnapshotFast reads. The value
// does not refer to line.
func decodeSnapshotLine(line []byte) (snapshotLine, error) {
	if l, ok := decodeSnapshotFast(line); ok {
		return l, nil
	}
	var l snapshotLine
	err := json.Unmarshal(line, &l)
	return l, err
}

// decodeSnapshotFast decodes a snapshot line of one card, receipt or
// conflict in the shape encodeFramed writes it, with the same rules as
// decodeFast: the keys of the struct in its order, each at most once, none
// unknown, no whitespace, no nulls, integers of at most 18 digits, times in
// UTC as RFC 3339, strings of valid UTF-8. The members a struct always
// writes (those without omitempty) must be there. It reports any other line
// as not handled (ok false), never as an error.
func decodeSnapshotFast(line []byte) (l snapshotLine, ok bool) {
	n := len(line) - crcSuffixLen
	if n < 2 || line[0] != '{' || !crcMemberOK(line[n:]) {
		return l, false
	}
	d := fastDecoder{b: line[:n]}
	b := d.b
	var i int
	if j := lit(b, 0, `{"card":`); j >= 0 {
		blk := new(cardBlock)
		i = d.card(j, blk)
		l.Card = &blk.c
	} else if j := lit2(b, 0, `{"receip`, `t":`); j >= 0 {
		k := new(keyed)
		i = d.receipt(j, k)
		l.Receipt = k
	} else if j := lit2(b, 0, `{"confli`, `ct":`); j >= 0 {
		c := new(Conflict)
		i = d.conflict(j, c)
		l.Conflict = c
	} else {
		return snapshotLine{}, false
	}
	// The top-level object ends with the crc member.
	if i != len(b) {
		return snapshotLine{}, false
	}
	d.finish()
	return l, true
}

// cardBlock holds a card and the value its Progress points to in one
// allocation.
type cardBlock struct {
	c        Card
	progress int
}

// cardTimes gathers the optional times of a card as they are read, so the
// ones it has take one allocation together.
type cardTimes struct {
	t   [5]time.Time
	dst [5]**time.Time
	n   int
}

// read reads a time at b[i:] for *dst.
func (ts *cardTimes) read(b []byte, i int, dst **time.Time) int {
	ts.t[ts.n], i = scanTime(b, i)
	ts.dst[ts.n] = dst
	ts.n++
	return i
}

// place points the card's fields at their times.
func (ts *cardTimes) place() {
	if ts.n == 0 {
		return
	}
	all := make([]time.Time, ts.n)
	copy(all, ts.t[:ts.n])
	for k := range ts.n {
		*ts.dst[k] = &all[k]
	}
}

// card reads a card object in the order of Card's fields.
func (d *fastDecoder) card(i int, blk *cardBlock) int {
	b, c := d.b, &blk.c
	var ts cardTimes
	i = d.str(lit(b, i, `{"id":`), &c.ID)
	i = d.str(lit2(b, i, `,"title"`, `:`), &c.Title)
	if j := lit(b, i, `,"body":`); j >= 0 {
		i = d.str(j, &c.Body)
	}
	if j := lit2(b, i, `,"phase"`, `:`); j >= 0 {
		i = d.str(j, &c.Phase)
	}
	c.Labels, i = d.strs(lit2(b, i, `,"labels`, `":`))
	c.Priority, i = scanInt(b, lit2(b, i, `,"priori`, `ty":`))
	i = d.status(lit2(b, i, `,"status`, `":`), &c.Status)
	c.DependsOn, i = d.strs(lit2(b, i, `,"depend`, `s_on":`))
	if j := lit2(b, i, `,"parent`, `":`); j >= 0 {
		i = d.str(j, &c.Parent)
	}
	c.Acceptance, i = d.strs(lit(b, lit2(b, i, `,"accept`, `ance"`), `:`))
	if j := lit(b, lit2(b, i, `,"idempo`, `tency_ke`), `y":`); j >= 0 {
		i = d.str(j, &c.IdempotencyKey)
	}
	if j := lit(b, lit2(b, i, `,"claim_`, `owner"`), `:`); j >= 0 {
		i = d.str(j, &c.ClaimOwner)
	}
	c.ClaimEpoch, i = scanInt64(b, lit(b, lit2(b, i, `,"claim_`, `epoch"`), `:`))
	if j := lit(b, lit2(b, i, `,"claime`, `d_at"`), `:`); j >= 0 {
		i = ts.read(b, j, &c.ClaimedAt)
	}
	if j := lit(b, lit2(b, i, `,"claim_`, `ttl_seco`), `nds":`); j >= 0 {
		c.ClaimTTLSeconds, i = scanInt64(b, j)
	}
	if j := lit(b, lit2(b, i, `,"lease_`, `expires_`), `at":`); j >= 0 {
		i = ts.read(b, j, &c.LeaseExpiresAt)
	}
	if j := lit(b, lit2(b, i, `,"last_h`, `eartbeat`), `_at":`); j >= 0 {
		i = ts.read(b, j, &c.LastHeartbeatAt)
	}
	c.Attempts, i = scanInt(b, lit(b, lit2(b, i, `,"attemp`, `ts"`), `:`))
	c.MaxAttempts, i = scanInt(b, lit(b, lit2(b, i, `,"max_at`, `tempts"`), `:`))
	if j := lit(b, lit2(b, i, `,"defer_`, `until"`), `:`); j >= 0 {
		i = ts.read(b, j, &c.DeferUntil)
	}
	if j := lit(b, lit2(b, i, `,"blocke`, `d_reason`), `":`); j >= 0 {
		i = d.str(j, &c.BlockedReason)
	}
	if j := lit(b, lit2(b, i, `,"closed`, `_at"`), `:`); j >= 0 {
		i = ts.read(b, j, &c.ClosedAt)
	}
	if j := lit(b, lit2(b, i, `,"close_`, `note"`), `:`); j >= 0 {
		i = d.str(j, &c.CloseNote)
	}
	if j := lit2(b, i, `,"progre`, `ss":`); j >= 0 {
		blk.progress, i = scanInt(b, j)
		c.Progress = &blk.progress
	}
	// A null checkpoint is left to the JSON decoder.
	if j := lit2(b, i, `,"checkp`, `oint":`); j >= 0 && j < len(b) && b[j] != 'n' {
		if i = skipValue(b, j, 0); i >= 0 {
			c.Checkpoint = append([]byte(nil), b[j:i]...)
		}
	}
	c.CreatedAt, i = scanTime(b, lit(b, lit2(b, i, `,"create`, `d_at"`), `:`))
	c.UpdatedAt, i = scanTime(b, lit(b, lit2(b, i, `,"update`, `d_at"`), `:`))
	c.Version, i = scanInt64(b, lit2(b, i, `,"versio`, `n":`))
	if j := lit2(b, i, `,"notes"`, `:`); j >= 0 {
		c.Notes, i = d.notes(j)
	}
	if i = lit(b, i, "}"); i >= 0 {
		ts.place()
	}
	return i
}

// notes reads a card's notes, each with its members in the order of Note;
// [] is an empty, non-nil slice.
func (d *fastDecoder) notes(i int) ([]Note, int) {
	b := d.b
	if i = lit(b, i, "["); i < 0 {
		return nil, -1
	}
	if j := lit(b, i, "]"); j >= 0 {
		return []Note{}, j
	}
	// Every note starts so, and a string cannot hold it (its quotes would
	// be escaped): the count bounds the notes, whose strings must not move
	// before finish.
	notes := make([]Note, 0, bytes.Count(b[i:], []byte(`{"text":`)))
	for len(notes) < cap(notes) {
		notes = append(notes, Note{})
		n := &notes[len(notes)-1]
		i = d.str(lit(b, i, `{"text":`), &n.Text)
		i = d.str(lit2(b, i, `,"autho`, `r":`), &n.Author)
		n.At, i = scanTime(b, lit(b, i, `,"at":`))
		if i = lit(b, i, "}"); i < 0 || i >= len(b) {
			return nil, -1
		}
		if b[i] == ']' {
			return notes, i + 1
		}
		if b[i] != ',' {
			return nil, -1
		}
		i++
	}
	return nil, -1
}

// status reads a status. A known one is the package's constant, which
// takes no copy.
func (d *fastDecoder) status(i int, dst *Status) int {
	start, end, esc, j := scanString(d.b, i)
	if j < 0 || esc != "" {
		*dst = Status(esc)
		return j
	}
	switch string(d.b[start:end]) {
	case string(StatusReady):
		*dst = StatusReady
	case string(StatusClaimed):
		*dst = StatusClaimed
	case string(StatusBlocked):
		*dst = StatusBlocked
	case string(StatusDone):
		*dst = StatusDone
	default:
		return d.str(i, (*string)(dst))
	}
	return j
}

// receipt reads a receipt object: the request id, then Receipt's fields.
func (d *fastDecoder) receipt(i int, k *keyed) int {
	b, r := d.b, &k.Receipt
	i = d.str(lit(b, lit2(b, i, `{"reques`, `t_id"`), `:`), &k.RequestID)
	i = d.str(lit2(b, i, `,"event"`, `:`), &r.Event)
	r.At, i = scanTime(b, lit(b, i, `,"at":`))
	i = d.op(lit(b, i, `,"op":`), &r.Op)
	i = d.str(lit(b, i, `,"card":`), &r.Card)
	r.Epoch, i = scanInt64(b, lit2(b, i, `,"epoch"`, `:`))
	r.Version, i = scanInt64(b, lit2(b, i, `,"versio`, `n":`))
	return lit(b, i, "}")
}

// conflict reads a conflict object.
func (d *fastDecoder) conflict(i int, c *Conflict) int {
	b := d.b
	i = d.str(lit2(b, i, `{"event"`, `:`), &c.Event)
	i = d.str(lit(b, i, `,"at":`), &c.At)
	if j := lit2(b, i, `,"clock"`, `:`); j >= 0 {
		i = d.str(j, &c.Clock)
	}
	i = d.op(lit(b, i, `,"op":`), &c.Op)
	i = d.str(lit(b, i, `,"card":`), &c.Card)
	i = d.str(lit2(b, i, `,"actor"`, `:`), &c.Actor)
	if j := lit2(b, i, `,"owner"`, `:`); j >= 0 {
		i = d.str(j, &c.Owner)
	}
	if j := lit2(b, i, `,"winner`, `":`); j >= 0 {
		i = d.str(j, &c.Winner)
	}
	i = d.str(lit2(b, i, `,"reason`, `":`), &c.Reason)
	return lit(b, i, "}")
}

package wire

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// checkSnapshotLine decodes line with the fast path and with the JSON
// decoder. When the fast path takes the line, the JSON decoder must take it
// too and give the same value, and the value must not share memory with
// line. It reports whether the fast path took the line.
func checkSnapshotLine(t *testing.T, line []byte) bool {
	t.Helper()
	var want SnapshotLine
	werr := json.Unmarshal(line, &want)
	in := bytes.Clone(line)
	fast, ok := DecodeSnapshotFast(in)
	if !ok {
		if fast != (SnapshotLine{}) {
			t.Fatalf("decodeSnapshotFast declined %q but returned a value", line)
		}
		return false
	}
	if werr != nil {
		t.Fatalf("decodeSnapshotFast took a line the JSON decoder rejects (%v):\n%q\n%s", werr, line, DumpSnapshotLine(fast))
	}
	for i := range in {
		in[i] = 'X'
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("decodeSnapshotFast and the JSON decoder disagree on\n%q\nfast: %s\njson: %s", line, DumpSnapshotLine(fast), DumpSnapshotLine(want))
	}
	return true
}

// TestDecodeSnapshotShapes: lines in other shapes are left to the JSON
// decoder, and the ones the fast path takes decode the same.
func TestDecodeSnapshotShapes(t *testing.T) {
	const (
		head = `{"card":{"id":"A","title":"t","labels":[],"priority":0,"status":"ready","depends_on":[],"acceptance":[],"claim_epoch":0`
		tail = `,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","version":1}}`
		mid  = `,"attempts":0,"max_attempts":0`
		rcpt = `{"receipt":{"request_id":"r","event":"e","at":"2026-01-01T00:00:00.5Z","op":"claim","card":"A","epoch":1,"version":2}}`
		cfl  = `{"conflict":{"event":"e","at":"2026-01-01T00:00:00Z","op":"create","card":"A","actor":"a","reason":"why"}}`
	)
	card := func(s string) string { return head + s + tail }
	cases := []struct {
		obj  string
		fast bool
	}{
		{card(mid), true},
		{head + `,"claimed_at":"2026-01-01T00:00:00Z","claim_ttl_seconds":600,"lease_expires_at":"2026-01-01T00:10:00Z","last_heartbeat_at":"2026-01-01T00:01:00.000000001Z"` +
			mid + `,"defer_until":"2026-02-01T00:00:00Z","blocked_reason":"b","closed_at":"2026-01-01T00:00:00Z","close_note":"n","progress":100,"checkpoint":{"a":[1]}` + tail, true},
		{`{"card":{"id":"A","title":"t","body":"b","phase":"p","labels":["a"],"priority":-1,"status":"x","depends_on":["B"],"parent":"P","acceptance":["c",""],"idempotency_key":"k","claim_owner":"o","claim_epoch":1` +
			mid + tail, true},
		{`{"card":{"id":"A","title":"","body":"","labels":[],"priority":0,"status":"","depends_on":[],"acceptance":[],"claim_epoch":0` + mid + tail, true},
		{`{"card":{"id":"\u0041\n","title":"\ud83d\ude00\"","labels":["\/"],"priority":0,"status":"re\u0061dy","depends_on":[],"acceptance":[],"claim_epoch":0` + mid + tail, true},
		{rcpt, true},
		{`{"receipt":{"request_id":"","event":"","at":"0001-01-01T00:00:00Z","op":"","card":"","epoch":0,"version":0}}`, true},
		{cfl, true},
		{`{"conflict":{"event":"","at":"","op":"x","card":"","actor":"","reason":""}}`, true},
		{`{"card":null}`, false},
		{`{"card":{}}`, false},
		{`{}`, false},
		{`{"receipt":null}`, false},
		{`{"conflict":{}}`, false},
		{card(mid[:len(mid)-len(`,"max_attempts":0`)]), false},                                           // a member missing
		{card(`,"attempts":0,"attempts":0,"max_attempts":0`), false},                                     // repeated
		{card(`,"max_attempts":0,"attempts":0`), false},                                                  // out of order
		{card(mid + `,"extra":1`), false},                                                                // unknown
		{card(mid + `,"progress":null`), false},                                                          // null
		{card(mid + `,"checkpoint":null`), false},                                                        // null raw message
		{card(mid + `,"checkpoint":{ }`), false},                                                         // whitespace
		{card(mid + `,"closed_at":null`), false},                                                         // null time
		{card(mid + `,"closed_at":"2026-01-01T00:00:00+01:00"`), false},                                  // offset
		{card(mid + `,"progress":1.5`), false},                                                           // fraction
		{card(`,"attempts":1e1,"max_attempts":0`), false},                                                // exponent
		{card(`,"attempts":0,"max_attempts":1000000000000000000`), false},                                // 19 digits
		{card(mid + `,"Progress":1`), false},                                                             // case-folded key
		{strings.Replace(card(mid), `"labels":[]`, `"labels":null`, 1), false},                           // null slice
		{strings.Replace(card(mid), `"labels":[]`, `"labels":["a",null]`, 1), false},                     // null element
		{strings.Replace(card(mid), `"labels":[]`, `"labels":["a",]`, 1), false},                         // trailing comma
		{strings.Replace(card(mid), `"labels":[]`, `"labels":[ ]`, 1), false},                            // whitespace
		{strings.Replace(card(mid), `"title":"t"`, `"title":"\ud800"`, 1), false},                        // lone surrogate
		{strings.Replace(card(mid), `"title":"t"`, "\"title\":\"\xff\"", 1), false},                      // invalid UTF-8
		{strings.Replace(card(mid), `"status":"ready"`, `"status":1`, 1), false},                         // not a string
		{strings.Replace(card(mid), `"version":1}}`, `"version":1},"receipt":null}`, 1), false},          // two members
		{strings.Replace(card(mid), `"version":1}}`, `"version":1},"card":{"id":"B"}}`, 1), false},       // repeated member
		{strings.Replace(card(mid), `"version":1}}`, `"version":1} }`, 1), false},                        // whitespace
		{strings.Replace(card(mid), `"created_at":"2026-01-01T00:00:00Z"`, `"created_at":""`, 1), false}, // empty time
		{strings.Replace(rcpt, `"version":2`, `"version":2,"x":1`, 1), false},
		{strings.Replace(rcpt, `"epoch":1,`, ``, 1), false},
		{strings.Replace(rcpt, `"at":"2026-01-01T00:00:00.5Z"`, `"at":"2026-01-01"`, 1), false},
		{strings.Replace(cfl, `"at":"2026-01-01T00:00:00Z"`, `"at":5`, 1), false},
		{strings.Replace(cfl, `"reason":"why"`, `"reason":"why","reason":"x"`, 1), false},
	}
	for _, tc := range cases {
		body := bytes.TrimSuffix(frame(tc.obj), []byte{'\n'})
		if got := checkSnapshotLine(t, body); got != tc.fast {
			t.Errorf("fast path took %s: %v, want %v", tc.obj, got, tc.fast)
		}
	}
	// Broken frames are never taken.
	for _, line := range []string{``, `{}`, `{"card":{},"crc":"0000000g"}`, `{"conflict":{"event":"","at":"","op":"x","card":"","actor":"","reason":""}}`,
		`{"conflict":{"event":"","at":"","op":"x","card":"","actor":"","reason":""},"crc":"00000000"]`} {
		if checkSnapshotLine(t, []byte(line)) {
			t.Errorf("fast path took %q", line)
		}
	}
}

// randomCard builds a card from r. plain is whether its line is in the
// shape the fast path must take.
func randomCard(r *rand.Rand) (c *Card, plain bool) {
	plain = true
	g := randomValues{r: r, plain: &plain, zoneOdds: 12}
	str, integer, maybe, randTime := g.str, g.integer, g.maybe, g.time
	optTime := func() *time.Time {
		if maybe() {
			ts := randTime()
			return &ts
		}
		return nil
	}
	optStr := func() string {
		if maybe() {
			return str()
		}
		return ""
	}
	list := func() []string {
		if r.IntN(16) == 0 {
			plain = false
			return nil // encodes as null
		}
		l := []string{}
		for range r.IntN(4) + r.IntN(2)*r.IntN(20) {
			l = append(l, str())
		}
		return l
	}
	c = &Card{ID: str(), Title: str(), Body: optStr(), Phase: optStr(), Labels: list(), Priority: int(integer()), DependsOn: list(),
		Parent: optStr(), Acceptance: list(), IdempotencyKey: optStr(), ClaimOwner: optStr(), ClaimEpoch: integer(), ClaimedAt: optTime(),
		LeaseExpiresAt: optTime(), LastHeartbeatAt: optTime(), Attempts: int(integer()), MaxAttempts: int(integer()), DeferUntil: optTime(),
		BlockedReason: optStr(), ClosedAt: optTime(), CloseNote: optStr(), CreatedAt: randTime(), UpdatedAt: randTime(), Version: integer()}
	if r.IntN(2) == 0 {
		c.Status = []Status{StatusReady, StatusClaimed, StatusBlocked, StatusDone}[r.IntN(4)]
	} else {
		c.Status = Status(str())
	}
	if maybe() {
		c.ClaimTTLSeconds = integer()
	}
	if maybe() {
		p := int(integer())
		c.Progress = &p
	}
	if maybe() {
		cp := randomCheckpoints[r.IntN(len(randomCheckpoints))]
		if cp == "null" || strings.Contains(cp, " ") {
			plain = false
		}
		c.Checkpoint = json.RawMessage(cp)
	}
	if maybe() {
		c.Notes = []Note{}
		for range r.IntN(4) + r.IntN(2)*r.IntN(20) {
			c.Notes = append(c.Notes, Note{Text: str(), Author: str(), At: randTime()})
		}
		if len(c.Notes) == 0 {
			plain = false // omitted, so it reads back as nil
		}
	}
	return c, plain
}

// randomSnapshotLine builds a snapshot line from r: a card, a receipt or a
// conflict, written as a snapshot writes them (EncodeFramed), without the
// newline.
func randomSnapshotLine(r *rand.Rand) (line []byte, plain bool) {
	var l SnapshotLine
	plain = true
	switch r.IntN(4) {
	case 0:
		ts := time.Unix(r.Int64N(253402300799+62135596800)-62135596800, int64(r.IntN(1e9))).UTC()
		epoch, version := randomInt(r), randomInt(r)
		plain = fastIntOK(epoch) && fastIntOK(version)
		l.Receipt = &Keyed{RequestID: randomString(r), Receipt: Receipt{Event: randomString(r), At: ts, Op: Ops[r.IntN(len(Ops))],
			Card: randomString(r), Epoch: epoch, Version: version}}
	case 1:
		l.Conflict = &Conflict{Event: randomString(r), At: randomString(r), Op: Op(randomString(r)), Card: randomString(r),
			Actor: randomString(r), Reason: randomString(r)}
		// The members added later are there or not, each on its own.
		if r.IntN(2) == 0 {
			l.Conflict.Clock = randomString(r)
		}
		if r.IntN(2) == 0 {
			l.Conflict.Owner = randomString(r)
		}
		if r.IntN(2) == 0 {
			l.Conflict.Winner = randomString(r)
		}
	default:
		l.Card, plain = randomCard(r)
	}
	b, err := EncodeFramed(l)
	if err != nil {
		return nil, false // a time the encoder refuses
	}
	return bytes.TrimSuffix(b, []byte{'\n'}), plain
}

// seedSnapshotLines are the lines, without their newlines, of a card with
// every field set, of one with only the members always written, of a
// claimed card as a snapshot holds it, of a receipt, and of conflicts with
// and without the members added later.
func seedSnapshotLines(t testing.TB) [][]byte {
	t.Helper()
	var every Card
	fill(reflect.ValueOf(&every).Elem(), 2)
	plain := Card{ID: "A", Title: "t", Labels: []string{}, Status: StatusReady, DependsOn: []string{}, Acceptance: []string{},
		CreatedAt: t0, UpdatedAt: t0, Version: 1}
	var r Keyed
	fill(reflect.ValueOf(&r).Elem(), 3)
	var k Conflict
	fill(reflect.ValueOf(&k).Elem(), 4)
	older := Conflict{Event: "0000000000000003", At: "2026-01-02T03:04:05.000000002Z", Op: OpClaim, Card: "A", Actor: "host2", Reason: "card A is claimed by w1"}
	lines := [][]byte{typicalCardLine(t)}
	for _, l := range []SnapshotLine{{Card: &every}, {Card: &plain}, {Receipt: &r}, {Conflict: &k}, {Conflict: &older}} {
		line, err := EncodeFramed(l)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.TrimSuffix(line, []byte{'\n'}))
	}
	return lines
}

// FuzzDecodeSnapshotLine compares the fast path with the JSON decoder on
// arbitrary bytes (data, framed too when it looks like an object) and on
// snapshot lines written for random cards, receipts and conflicts (seed),
// as written and mutated (muts).
func FuzzDecodeSnapshotLine(f *testing.F) {
	for _, l := range seedSnapshotLines(f) {
		f.Add(l, uint64(0), []byte(nil))
		f.Add(l, uint64(0), []byte{1, 128, '"', 0, 30, ' ', 2, 200, 0})
	}
	const head = `{"card":{"id":"A","title":`
	const rest = `,"priority":0,"status":"ready","depends_on":[],"acceptance":[],"claim_epoch":0,"attempts":0,"max_attempts":0,` +
		`"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","version":1}}`
	for _, s := range []string{`"\"quoted\""`, `"back\\slash"`, `"\u00e9\u2028\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800"`,
		`"😀✓é"`, "\"\x01\"", "\"\xff\xfe\"", "\"\xed\xa0\x80\"", `"\/\b\f\n\r\t\u0000"`, `"a\"b\\c/d<e>&"`} {
		f.Add([]byte(head+s+`,"labels":[`+s+`,"x"]`+rest), uint64(0), []byte(nil))
		f.Add([]byte(head+`"t","labels":[]`+strings.Replace(rest, `"max_attempts":0`, `"max_attempts":0,"checkpoint":[`+s+`]`, 1)), uint64(0), []byte(nil))
	}
	for seed := range uint64(32) {
		f.Add([]byte(nil), seed+1, []byte(nil))
		f.Add([]byte(nil), seed+1, []byte{byte(seed), byte(seed * 37), byte(seed * 101)})
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, muts []byte) {
		checkSnapshotLine(t, data)
		if len(data) >= 2 && data[0] == '{' && data[len(data)-1] == '}' {
			obj := data
			if i := bytes.LastIndex(data, []byte(`,"crc":"`)); i > 0 && len(data)-i == crcSuffixLen {
				obj = append(bytes.Clone(data[:i]), '}')
			}
			framed := bytes.TrimSuffix(frame(string(obj)), []byte{'\n'})
			checkSnapshotLine(t, framed)
			checkSnapshotLine(t, mutate(framed, muts))
		}
		if seed == 0 {
			return
		}
		line, plain := randomSnapshotLine(rand.New(rand.NewPCG(seed, seed>>32)))
		if line == nil {
			return
		}
		if !checkSnapshotLine(t, line) && plain {
			t.Fatalf("the fast path declined a line EncodeFramed wrote:\n%q", line)
		}
		checkSnapshotLine(t, mutate(line, muts))
	})
}

// TestDecodeSnapshotLineGenerated runs the random half of
// FuzzDecodeSnapshotLine on many seeds, so the plain test run covers it too.
func TestDecodeSnapshotLineGenerated(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	taken, plains := 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed+1, 77))
		line, plain := randomSnapshotLine(r)
		if line == nil {
			continue
		}
		if plain {
			plains++
		}
		if checkSnapshotLine(t, line) {
			taken++
		} else if plain {
			t.Fatalf("the fast path declined a line EncodeFramed wrote:\n%q", line)
		}
		muts := make([]byte, 3*(1+r.IntN(3)))
		for i := range muts {
			muts[i] = byte(r.Uint32())
		}
		checkSnapshotLine(t, mutate(line, muts))
	}
	if taken < n/4 {
		t.Fatalf("the fast path took only %d of %d generated lines (%d plain)", taken, n, plains)
	}
}

// typicalCardLine is a claimed card as a snapshot holds it: title, labels,
// priority and the lease fields.
func typicalCardLine(t testing.TB) []byte {
	claimed := t0.Add(123456789)
	c := &Card{ID: "bl-k3x9q2mf", Title: `Fix the "login" redirect loop`, Labels: []string{"auth", "bug"}, Priority: 2, Status: StatusClaimed,
		DependsOn: []string{}, Acceptance: []string{}, ClaimOwner: "agent-7", ClaimEpoch: 3, ClaimedAt: &claimed, ClaimTTLSeconds: 600,
		LeaseExpiresAt: TimePtr(claimed.Add(10 * time.Minute)), Attempts: 1, CreatedAt: t0, UpdatedAt: claimed, Version: 4}
	line, err := EncodeFramed(SnapshotLine{Card: c})
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(line, []byte{'\n'})
}

// BenchmarkDecodeSnapshotCard decodes a typical card line.
func BenchmarkDecodeSnapshotCard(b *testing.B) {
	line := typicalCardLine(b)
	if _, ok := DecodeSnapshotFast(line); !ok {
		b.Fatalf("the fast path declines %s", line)
	}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := DecodeSnapshotFast(line); !ok {
			b.Fatal("declined")
		}
	}
}

// BenchmarkUnmarshalSnapshotCard is the JSON decoder alone on the same
// line, the cost the fast path avoids.
func BenchmarkUnmarshalSnapshotCard(b *testing.B) {
	line := typicalCardLine(b)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		var l SnapshotLine
		if err := json.Unmarshal(line, &l); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConflictLineFromOlderBl: a conflict line written before owner,
// winner and clock existed still reads, by both decoders, to the same
// conflict with those empty.
func TestConflictLineFromOlderBl(t *testing.T) {
	old := `{"conflict":{"event":"0000000000000003","at":"2026-01-02T03:04:05.000000002Z","op":"claim","card":"A","actor":"host2","reason":"card A is claimed by w1"}`
	line := bytes.TrimSuffix(frame(old+"}"), []byte{'\n'})
	if !checkSnapshotLine(t, line) {
		t.Fatalf("the fast path declined an older conflict line: %s", line)
	}
	l, _ := DecodeSnapshotFast(line)
	want := Conflict{Event: "0000000000000003", At: "2026-01-02T03:04:05.000000002Z", Op: OpClaim, Card: "A", Actor: "host2", Reason: "card A is claimed by w1"}
	if l.Conflict == nil || *l.Conflict != want {
		t.Fatalf("got %+v", l.Conflict)
	}
}

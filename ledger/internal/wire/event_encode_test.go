package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

// encodePrefix is what the encoders are given to append to, so a test sees
// that they append and that a declined value leaves dst as it was.
const encodePrefix = "prefix"

// checkEventEncoding compares appendEvent with the JSON encoder on e. When
// the fast path takes e, the JSON encoder must write the same bytes; it may
// decline e only if the JSON encoder refuses it or declineOK allows it. It
// reports whether the fast path took e.
func checkEventEncoding(t *testing.T, e *Event) bool {
	t.Helper()
	want, werr := json.MarshalWithOption(e, json.DisableHTMLEscape())
	got, ok := appendEvent([]byte(encodePrefix), e)
	if !ok {
		if string(got) != encodePrefix {
			t.Fatalf("appendEvent declined but changed dst to %q", got)
		}
		if werr == nil && !declineOK(e.Checkpoint, timesOfEvent(e)...) {
			t.Fatalf("appendEvent declined an event the JSON encoder writes as %q", want)
		}
		return false
	}
	got = bytes.TrimPrefix(got, []byte(encodePrefix))
	if werr != nil {
		t.Fatalf("appendEvent wrote an event the JSON encoder refuses (%v):\n%q\n%s", werr, got, dumpEvent(e))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("appendEvent and the JSON encoder disagree:\nfast: %q\njson: %q", got, want)
	}
	// The framed line is the JSON encoder's, framed.
	line, err := EncodeLine(e)
	if err != nil || !bytes.Equal(line, frame(string(want))) {
		t.Fatalf("EncodeLine = %q, %v; want %q", line, err, frame(string(want)))
	}
	return true
}

// checkCardEncoding compares AppendCard and the snapshot line of c with the
// JSON encoder, as checkEventEncoding does. It reports whether the fast
// path took c. (The indented form, which package export derives from this
// one, is compared there.)
func checkCardEncoding(t *testing.T, c *Card) bool {
	t.Helper()
	want, werr := json.MarshalWithOption(c, json.DisableHTMLEscape())
	got, ok := AppendCard([]byte(encodePrefix), c)
	if !ok {
		if string(got) != encodePrefix {
			t.Fatalf("AppendCard declined but changed dst to %q", got)
		}
		if werr == nil && !declineOK(c.Checkpoint, timesOfCard(c)...) {
			t.Fatalf("AppendCard declined a card the JSON encoder writes as %q", want)
		}
		return false
	}
	got = bytes.TrimPrefix(got, []byte(encodePrefix))
	if werr != nil {
		t.Fatalf("AppendCard wrote a card the JSON encoder refuses (%v):\n%s", werr, got)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendCard and the JSON encoder disagree:\nfast: %q\njson: %q", got, want)
	}
	lwant, _ := json.MarshalWithOption(SnapshotLine{Card: c}, json.DisableHTMLEscape())
	line, err := AppendFramed([]byte(encodePrefix), SnapshotLine{Card: c})
	if err != nil || !bytes.Equal(line, append([]byte(encodePrefix), frame(string(lwant))...)) {
		t.Fatalf("snapshot line = %q, %v; want %q", line, err, frame(string(lwant)))
	}
	return true
}

// rawDeclineOK reports whether raw is a checkpoint the encoders may leave to
// the JSON encoder although it takes it: one with invalid UTF-8, a
// surrogate escape, or deeper than maxRawDepth.
func rawDeclineOK(raw []byte) bool {
	return !utf8.Valid(raw) || bytes.Contains(bytes.ToLower(raw), []byte(`\ud`)) ||
		bytes.Count(raw, []byte("["))+bytes.Count(raw, []byte("{")) > maxRawDepth
}

// checkRaw compares appendRaw with the JSON encoder's json.RawMessage.
func checkRaw(t *testing.T, raw []byte) {
	t.Helper()
	want, werr := json.MarshalWithOption(json.RawMessage(raw), json.DisableHTMLEscape())
	got, ok := appendRaw([]byte(encodePrefix), raw)
	if !ok {
		if string(got) != encodePrefix {
			t.Fatalf("appendRaw declined but changed dst to %q", got)
		}
		if werr == nil && len(raw) > 0 && !rawDeclineOK(raw) {
			t.Fatalf("appendRaw declined %q, which the JSON encoder writes as %q", raw, want)
		}
		return
	}
	got = bytes.TrimPrefix(got, []byte(encodePrefix))
	if werr != nil {
		t.Fatalf("appendRaw took %q, which the JSON encoder refuses: %v", raw, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("appendRaw and the JSON encoder disagree on %q:\nfast: %q\njson: %q", raw, got, want)
	}
}

// fuzzSource builds values from fuzz bytes; past the end it reads zeros.
type fuzzSource struct{ b []byte }

func (s *fuzzSource) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *fuzzSource) n(k int) int { return int(s.byte()) % k }

func (s *fuzzSource) uint64() uint64 {
	var w [8]byte
	for i := range w {
		w[i] = s.byte()
	}
	return binary.LittleEndian.Uint64(w[:])
}

func (s *fuzzSource) maybe() bool { return s.byte()&3 == 0 }

// str is a string of pieces: the characters JSON escapes, multi-byte and
// invalid UTF-8, and runs of the fuzz bytes as they are.
func (s *fuzzSource) str() string {
	var b strings.Builder
	for range s.n(8) {
		switch c := s.byte(); {
		case int(c) < len(fastPieces):
			b.WriteString(fastPieces[c])
		case c < 0x80:
			b.WriteString("plain text")
		case c < 0xc0:
			b.WriteByte(s.byte())
		default:
			k := min(int(c-0xc0), len(s.b))
			b.Write(s.b[:k])
			s.b = s.b[k:]
		}
	}
	return b.String()
}

func (s *fuzzSource) int64() int64 {
	switch s.n(8) {
	case 0:
		return int64(s.uint64())
	case 1:
		return -int64(s.n(200))
	case 2, 3:
		return 0
	}
	return int64(s.byte()) * int64(s.n(50)+1)
}

// time is a time with or without fractional seconds, in UTC, in a fixed
// zone (of an offset in seconds too, or of a day or more, which
// MarshalJSON refuses) or in Local, in and out of the years RFC 3339 holds.
func (s *fuzzSource) time() time.Time {
	sec := int64(s.uint64() % (253402300799 + 62135596800))
	if s.n(16) == 0 {
		sec += 253402300799 // past the year 9999
	}
	ts := time.Unix(sec-62135596800, int64(s.uint64()%1e9))
	switch s.n(4) {
	case 0:
		ts = ts.Truncate(time.Second)
	case 1:
		ts = ts.Truncate(time.Millisecond)
	}
	switch s.n(8) {
	case 0:
		return ts.In(time.FixedZone("Z", int(int32(s.uint64()))%(30*3600)))
	case 1:
		return ts.In(time.FixedZone("", (s.n(48)-24)*1800))
	case 2:
		return ts.Local()
	case 3:
		return ts // Local too, as time.Unix gives it
	}
	return ts.UTC()
}

// rawPieces are the bits of random checkpoints.
var rawPieces = []string{"{", "}", "[", "]", ",", ":", " ", "\n", "\t", "\r", `"k"`, `"x\"\\\/\b\f\n\r\t\u00e9"`, `"\ud83d\ude00"`,
	`"\ud800"`, `"\udc00"`, "\"\u2028<&>\"", "\"\xff\"", "\"\x01\"", "0", "-1.5e-3", "1E+2", "-0", "01", "1.", "true", "false", "null",
	"nul", `"😀"`, "\ufeff", "\x00"}

// raw is a checkpoint: a JSON value with white space, or pieces that may
// not be one, or fuzz bytes as they are.
func (s *fuzzSource) raw() []byte {
	switch s.n(4) {
	case 0:
		var b []byte
		for range s.n(24) {
			b = append(b, rawPieces[s.n(len(rawPieces))]...)
		}
		return b
	case 1:
		k := min(s.n(64), len(s.b))
		b := bytes.Clone(s.b[:k])
		s.b = s.b[k:]
		return b
	}
	return s.value(nil, 0)
}

// value appends a JSON value, with white space here and there.
func (s *fuzzSource) value(b []byte, depth int) []byte {
	space := func() {
		if s.n(8) == 0 {
			b = append(b, " \n\t\r"[s.n(4)])
		}
	}
	space()
	switch k := s.n(8); {
	case k == 0 && depth < 70:
		b = append(b, '{')
		for i := range s.n(4) {
			if i > 0 {
				b = append(b, ',')
			}
			space()
			b = appendString(b, s.str())
			space()
			b = append(b, ':')
			b = s.value(b, depth+1)
		}
		space()
		b = append(b, '}')
	case k == 1 && depth < 70:
		b = append(b, '[')
		for i := range s.n(4) {
			if i > 0 {
				b = append(b, ',')
			}
			b = s.value(b, depth+1)
		}
		space()
		b = append(b, ']')
	case k == 2:
		b = append(b, rawPieces[s.n(len(rawPieces))]...)
	case k == 3:
		b = append(b, fmt.Sprint(s.int64())...)
	default:
		b = appendString(b, s.str())
	}
	space()
	return b
}

func (s *fuzzSource) event() *Event {
	e := &Event{V: int(s.int64()), ID: s.str(), At: s.time(), Actor: s.str(), Card: s.str()}
	if s.n(8) == 0 {
		e.Op = Op(s.str())
	} else {
		e.Op = Ops[s.n(len(Ops))]
	}
	if s.maybe() {
		e.RequestID = s.str()
	}
	if s.maybe() {
		e.ExpectVersion = s.int64()
	}
	if s.maybe() {
		e.Epoch = s.int64()
	}
	if s.maybe() {
		e.Owner = s.str()
	}
	if s.maybe() {
		e.TTLSeconds = s.int64()
	}
	if s.maybe() {
		e.Reason = s.str()
	}
	if s.maybe() {
		e.To = s.str()
	}
	if s.maybe() {
		p := int(s.int64())
		e.Progress = &p
	}
	switch s.n(4) {
	case 0:
		e.Checkpoint = s.raw()
	case 1:
		e.Checkpoint = json.RawMessage{}
	}
	e.Force = s.maybe()
	if s.maybe() {
		f := &Fields{}
		strPtr := func() *string {
			if s.maybe() {
				v := s.str()
				return &v
			}
			return nil
		}
		intPtr := func() *int {
			if s.maybe() {
				v := int(s.int64())
				return &v
			}
			return nil
		}
		listPtr := func() *[]string {
			switch s.n(4) {
			case 0:
				return nil
			case 1:
				var l []string
				return &l
			}
			l := s.strs()
			return &l
		}
		f.Title, f.Body, f.Phase, f.Priority = strPtr(), strPtr(), strPtr(), intPtr()
		f.Labels, f.DependsOn, f.Parent, f.Acceptance = listPtr(), listPtr(), strPtr(), listPtr()
		f.MaxAttempts = intPtr()
		if s.maybe() {
			d := s.time()
			f.DeferUntil = &d
		}
		if s.maybe() {
			f.IdempotencyKey = s.str()
		}
		e.Fields = f
	}
	if s.maybe() {
		e.Text = s.str()
	}
	if s.maybe() {
		e.BackoffSeconds = s.int64()
	}
	if s.maybe() {
		e.BackoffMaxSeconds = s.int64()
	}
	return e
}

// strs is a list: nil, empty, or of strings.
func (s *fuzzSource) strs() []string {
	if s.n(8) == 0 {
		return nil
	}
	l := []string{}
	for range s.n(5) {
		l = append(l, s.str())
	}
	return l
}

func (s *fuzzSource) card() *Card {
	optStr := func() string {
		if s.maybe() {
			return s.str()
		}
		return ""
	}
	optTime := func() *time.Time {
		if s.maybe() {
			ts := s.time()
			return &ts
		}
		return nil
	}
	c := &Card{ID: s.str(), Title: s.str(), Body: optStr(), Phase: optStr(), Labels: s.strs(), Priority: int(s.int64()),
		DependsOn: s.strs(), Parent: optStr(), Acceptance: s.strs(), IdempotencyKey: optStr(), ClaimOwner: optStr(),
		ClaimEpoch: s.int64(), ClaimedAt: optTime()}
	if s.maybe() {
		c.ClaimTTLSeconds = s.int64()
	}
	c.LeaseExpiresAt, c.LastHeartbeatAt = optTime(), optTime()
	c.Attempts, c.MaxAttempts, c.DeferUntil = int(s.int64()), int(s.int64()), optTime()
	c.BlockedReason, c.ClosedAt, c.CloseNote = optStr(), optTime(), optStr()
	if s.maybe() {
		p := int(s.int64())
		c.Progress = &p
	}
	switch s.n(4) {
	case 0:
		c.Checkpoint = s.raw()
	case 1:
		c.Checkpoint = json.RawMessage{}
	}
	c.CreatedAt, c.UpdatedAt, c.Version = s.time(), s.time(), s.int64()
	switch s.n(4) {
	case 0:
		c.Notes = []Note{}
		for range s.n(4) {
			c.Notes = append(c.Notes, Note{Text: s.str(), Author: s.str(), At: s.time()})
		}
	case 1:
		c.Notes = []Note{}
	}
	if s.n(2) == 0 {
		c.Status = []Status{StatusReady, StatusClaimed, StatusBlocked, StatusDone}[s.n(4)]
	} else {
		c.Status = Status(s.str())
	}
	return c
}

// declineOK reports whether the fast path may decline a value with these
// times and checkpoint: only for a time MarshalJSON refuses or a checkpoint
// rawDeclineOK allows.
func declineOK(checkpoint []byte, times ...time.Time) bool {
	for _, ts := range times {
		if _, err := ts.MarshalJSON(); err != nil {
			return true
		}
	}
	return len(checkpoint) > 0 && rawDeclineOK(checkpoint)
}

func timesOfEvent(e *Event) []time.Time {
	ts := []time.Time{e.At}
	if e.Fields != nil && e.Fields.DeferUntil != nil {
		ts = append(ts, *e.Fields.DeferUntil)
	}
	return ts
}

func timesOfCard(c *Card) []time.Time {
	ts := []time.Time{c.CreatedAt, c.UpdatedAt}
	for _, p := range []*time.Time{c.ClaimedAt, c.LeaseExpiresAt, c.LastHeartbeatAt, c.DeferUntil, c.ClosedAt} {
		if p != nil {
			ts = append(ts, *p)
		}
	}
	for _, n := range c.Notes {
		ts = append(ts, n.At)
	}
	return ts
}

// encodeSeeds are the fuzz bytes of a few values of each kind.
func encodeSeeds() [][]byte {
	seeds := [][]byte{nil, {0xff}, bytes.Repeat([]byte{0}, 64), bytes.Repeat([]byte{1}, 256), bytes.Repeat([]byte{0xc8, 'a', 0xe2, 0x80, 0xa8}, 60)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		b := make([]byte, 64+r.IntN(512))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzEncodeEvent compares appendEvent with the JSON encoder on events built
// from the fuzz bytes and from randomEvent (seed): where the fast path
// takes an event, the bytes must be the JSON encoder's; it may decline only
// an event with a time MarshalJSON refuses or a checkpoint it leaves.
func FuzzEncodeEvent(f *testing.F) {
	for _, b := range encodeSeeds() {
		f.Add(b, uint64(0))
	}
	for seed := range uint64(16) {
		f.Add([]byte(nil), seed+1)
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		src := &fuzzSource{b: data}
		e := src.event()
		checkEventEncoding(t, e)
		checkRaw(t, e.Checkpoint)
		checkRaw(t, data)
		if seed != 0 {
			e, _ := randomEvent(rand.New(rand.NewPCG(seed, seed>>32)))
			checkEventEncoding(t, e)
		}
	})
}

// FuzzEncodeCard is FuzzEncodeEvent for cards, compact and indented.
func FuzzEncodeCard(f *testing.F) {
	for _, b := range encodeSeeds() {
		f.Add(b, uint64(0))
	}
	for seed := range uint64(16) {
		f.Add([]byte(nil), seed+1)
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		c := (&fuzzSource{b: data}).card()
		checkCardEncoding(t, c)
		if seed != 0 {
			c, _ := randomCard(rand.New(rand.NewPCG(seed, seed>>32)))
			checkCardEncoding(t, c)
		}
	})
}

// TestEncodeGenerated runs the fuzz targets on many generated inputs, so
// the plain test run covers them too.
func TestEncodeGenerated(t *testing.T) {
	n := 5_000
	if testing.Short() {
		n = 500
	}
	r := rand.New(rand.NewPCG(7, 11))
	events, cards := 0, 0
	for i := range n {
		data := make([]byte, r.IntN(700))
		for k := range data {
			data[k] = byte(r.Uint32())
		}
		e := (&fuzzSource{b: data}).event()
		if checkEventEncoding(t, e) {
			events++
		}
		c := (&fuzzSource{b: data}).card()
		if checkCardEncoding(t, c) {
			cards++
		}
		checkRaw(t, (&fuzzSource{b: data}).raw())
		e, _ = randomEvent(rand.New(rand.NewPCG(uint64(i)+1, 5)))
		checkEventEncoding(t, e)
		c, _ = randomCard(rand.New(rand.NewPCG(uint64(i)+1, 5)))
		checkCardEncoding(t, c)
	}
	if events < n/2 || cards < n/2 {
		t.Fatalf("the fast path took %d events and %d cards of %d", events, cards, n)
	}
}

// TestEncodeTakesEveryOp: the events the API writes, of every op, take the
// fast path. (The cards the fold and the API return: ledger's test of this
// name.)
func TestEncodeTakesEveryOp(t *testing.T) {
	evs := append(opEvents(), roundTripEvents()...)
	evs = append(evs, BenchEvents(20)...)
	evs = append(evs, SnapshotEvents()...)
	ops := map[Op]bool{}
	for _, e := range evs {
		if !checkEventEncoding(t, e) {
			t.Fatalf("appendEvent declined a %s event: %s", e.Op, dumpEvent(e))
		}
		ops[e.Op] = true
	}
	if len(ops) != len(Ops) {
		t.Fatalf("events of %d ops, want %d", len(ops), len(Ops))
	}
	// A checkpoint as a user passes it, with white space.
	hb := &Event{V: 1, ID: "e", At: t0, Actor: "a", Op: OpHeartbeat, Card: "A", Epoch: 1, Owner: "w",
		Checkpoint: json.RawMessage(" {\"step\": 4, \"files\": [\"a.go\", \"b.go\"],\n\t\"done\": {}} ")}
	if !checkEventEncoding(t, hb) {
		t.Fatal("appendEvent declined a checkpoint with white space")
	}
	// No card is null.
	if got, ok := AppendCard(nil, nil); !ok || string(got) != "null" {
		t.Fatalf("AppendCard(nil) = %q, %v", got, ok)
	}
}

// TestEncodeDeclines: values the fast path leaves to the JSON encoder.
func TestEncodeDeclines(t *testing.T) {
	base := func() *Event {
		return &Event{V: 1, ID: "e", At: t0, Actor: "a", Op: OpHeartbeat, Card: "A"}
	}
	for _, cp := range []string{"nul", "1 2", "{", `{"a":1,}`, "\"\xff\"", `"\ud800"`, `"\udc00\ud800"`,
		strings.Repeat("[", maxRawDepth+1) + strings.Repeat("]", maxRawDepth+1)} {
		e := base()
		e.Checkpoint = json.RawMessage(cp)
		if checkEventEncoding(t, e) {
			t.Errorf("appendEvent took checkpoint %q", cp)
		}
	}
	e := base()
	e.At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if checkEventEncoding(t, e) {
		t.Error("appendEvent took the year 10000")
	}
	if _, err := EncodeLine(e); err == nil {
		t.Error("EncodeLine wrote the year 10000")
	}
	e = base()
	e.Fields = &Fields{DeferUntil: new(time.Time)}
	*e.Fields.DeferUntil = t0.In(time.FixedZone("", 24*3600))
	if checkEventEncoding(t, e) {
		t.Error("appendEvent took an offset of a day")
	}
	// At the depth limit and in UTC, it takes them.
	e = base()
	e.Checkpoint = json.RawMessage(strings.Repeat("[", maxRawDepth) + strings.Repeat("]", maxRawDepth))
	e.At = t0.In(time.FixedZone("", -(23*3600 + 59*60 + 59)))
	if !checkEventEncoding(t, e) {
		t.Error("appendEvent declined a checkpoint at the depth limit")
	}
}

// encodeFramedJSON is EncodeFramed with the JSON encoder alone.
func encodeFramedJSON(v any) ([]byte, error) {
	body, err := json.MarshalWithOption(v, json.DisableHTMLEscape())
	if err != nil {
		return nil, err
	}
	sum := crc32.Checksum(body, Castagnoli())
	line := make([]byte, 0, len(body)+crcSuffixLen+1)
	line = append(line, body[:len(body)-1]...)
	line = fmt.Appendf(line, `,"crc":"%08x"}`, sum)
	return append(line, '\n'), nil
}

// BenchmarkEncodeLineJSON is BenchmarkEncodeLine with the JSON encoder, for
// comparison.
func BenchmarkEncodeLineJSON(b *testing.B) {
	ev := &Event{V: 1, ID: "9f2c51d0a4b7e361", At: t0, Actor: "alice@host", Op: OpClaim, Card: "bl-k3x9q2mf",
		RequestID: "req-123", ExpectVersion: 3, Epoch: 2, Owner: "agent-7", TTLSeconds: 600}
	want, _ := EncodeLine(ev)
	if got, _ := encodeFramedJSON(ev); !bytes.Equal(got, want) {
		b.Fatalf("%q\n%q", got, want)
	}
	for i := 0; i < b.N; i++ {
		if _, err := encodeFramedJSON(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStringBounds: both bounds the size check uses are at least what the
// encoder writes, for generated strings and for every byte value.
func TestStringBounds(t *testing.T) {
	check := func(s string) {
		n := len(appendString(nil, s))
		if e, w := escapedLen(s), wideLen(s); n > e || e > w {
			t.Fatalf("%q: encoded %d, escapedLen %d, wideLen %d", s, n, e, w)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		check(randomString(r))
	}
	for c := range 256 {
		for _, n := range []int{1, 7, 8, 9, 17} {
			check(strings.Repeat(string([]byte{byte(c)}), n))
			check("ab" + strings.Repeat(string([]byte{byte(c)}), n) + "\u2028")
		}
	}
}

func BenchmarkEncodeLine(b *testing.B) {
	ev := &Event{V: 1, ID: "9f2c51d0a4b7e361", At: t0, Actor: "alice@host", Op: OpClaim, Card: "bl-k3x9q2mf",
		RequestID: "req-123", ExpectVersion: 3, Epoch: 2, Owner: "agent-7", TTLSeconds: 600}
	for i := 0; i < b.N; i++ {
		if _, err := EncodeLine(ev); err != nil {
			b.Fatal(err)
		}
	}
}

package wire

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// checkFast decodes line with the fast path and with the JSON decoder. When
// the fast path takes the line, the JSON decoder must take it too and give
// the same event, and the event must not share memory with line. It reports
// whether the fast path took the line.
func checkFast(t *testing.T, line []byte) bool {
	t.Helper()
	in := bytes.Clone(line)
	got, ok := decodeFast(in)
	if !ok {
		if got != nil {
			t.Fatalf("decodeFast declined %q but returned an event", line)
		}
		return false
	}
	var want Event
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatalf("decodeFast took a line the JSON decoder rejects (%v):\n%q\n%+v", err, line, got)
	}
	for i := range in {
		in[i] = 'X'
	}
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("decodeFast and the JSON decoder disagree on\n%q\nfast: %s\njson: %s", line, dumpEvent(got), dumpEvent(&want))
	}
	return true
}

// dumpEvent shows an event for failure messages: as JSON, with the time
// zones, which JSON leaves out.
func dumpEvent(e *Event) string {
	b, _ := json.Marshal(e)
	out := fmt.Sprintf("%s at.loc=%q checkpoint=%q", b, e.At.Location(), []byte(e.Checkpoint))
	if e.Fields != nil && e.Fields.DeferUntil != nil {
		out += fmt.Sprintf(" defer_until.loc=%q", e.Fields.DeferUntil.Location())
	}
	return out
}

// opEvents are events of every op, with and without their optional fields,
// as the API writes them.
func opEvents() []*Event {
	at := time.Date(2026, 11, 22, 1, 50, 0, 123456789, time.UTC)
	deferUntil := at.Add(72 * time.Hour)
	var evs []*Event
	for i, op := range Ops {
		base := func() *Event {
			return &Event{V: 1, ID: "9f2c51d0a4b7e36" + strconv.Itoa(i%10), At: at, Actor: "alice@host", Op: op, Card: "bl-k3x9q2mf"}
		}
		evs = append(evs, base())
		full := base()
		full.RequestID = "req-" + string(op)
		switch op {
		case OpCreate, OpUpdate:
			full.Fields = &Fields{Title: strp(`Fix "quoted" title \ path/to`), Body: strp("line 1\nline 2\ttabbed\r\n<b>é ✓ 😀</b>\u2028\x01"),
				Phase: strp("M1"), Priority: intp(-3), Labels: strs("api", "ui"), DependsOn: &[]string{}, Parent: strp("bl-parent"),
				Acceptance: strs("returns 200 for \"GET /cards\"", ""), MaxAttempts: intp(5), DeferUntil: &deferUntil, IdempotencyKey: "idem-1"}
			evs = append(evs, full)
			part := base()
			part.Fields = &Fields{Priority: intp(0), Labels: &[]string{}}
			evs = append(evs, part)
			// More strings than the decoder gathers into one copy.
			many := base()
			many.RequestID, many.Owner, many.Reason, many.To = "r", "o", "why", "B"
			var labels []string
			for k := range 20 {
				labels = append(labels, fmt.Sprintf("label-%d", k))
			}
			many.Fields = &Fields{Title: strp("t"), Body: strp("b"), Phase: strp("p"), Parent: strp("P"),
				Labels: &labels, DependsOn: strs("A", "B", "C"), Acceptance: strs("x", "y"), IdempotencyKey: "k"}
			evs = append(evs, many)
			empty := base()
			empty.Fields = &Fields{}
			evs = append(evs, empty)
			continue
		case OpClaim:
			full.ExpectVersion, full.Epoch, full.Owner, full.TTLSeconds = 7, 3, "agent-7", 600
		case OpHeartbeat:
			full.Epoch, full.Owner, full.TTLSeconds, full.Progress = 3, "agent-7", 900, intp(42)
			full.Checkpoint = json.RawMessage(`{"step":"build","n":[1,-2.5e3,0.25,true,false,null],"s":"x\"\\\u00e9\ud83d\ude00","o":{}}`)
		case OpRelease, OpComplete, OpBlock:
			full.Epoch, full.Owner, full.Reason = 3, "agent-7", "done: see \"log\""
		case OpReclaim:
			full.Epoch, full.Force, full.Reason = 9, true, "stale"
		case OpLink, OpUnlink:
			full.To = "bl-other"
		case OpReopen, OpUnblock:
			full.Reason = "again"
		case OpNote:
			full.Owner, full.Epoch, full.Text = "agent-7", 3, "tried \"x\"\nnext: é ✓"
		case OpFail:
			full.Owner, full.Epoch, full.Reason, full.BackoffSeconds, full.BackoffMaxSeconds = "agent-7", 3, "exit status 2", 30, 3600
		}
		evs = append(evs, full)
	}
	return evs
}

// TestDecodeFastTakesEveryOp: the lines EncodeLine writes for every op take
// the fast path and decode to the event that was written.
func TestDecodeFastTakesEveryOp(t *testing.T) {
	evs := append(opEvents(), roundTripEvents()...)
	evs = append(evs, BenchEvents(20)...)
	for _, ev := range evs {
		line, err := EncodeLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		body := bytes.TrimSuffix(line, []byte{'\n'})
		if !checkFast(t, body) {
			t.Fatalf("%s: the fast path declined a line EncodeLine wrote:\n%s", ev.Op, line)
		}
		got, _ := decodeFast(body)
		if !reflect.DeepEqual(got, ev) {
			t.Fatalf("%s: decoded\n%s\nwant\n%s", ev.Op, dumpEvent(got), dumpEvent(ev))
		}
		viaDecodeLine, err := DecodeLine(line)
		if err != nil || !reflect.DeepEqual(viaDecodeLine, ev) {
			t.Fatalf("%s: DecodeLine = %+v, %v", ev.Op, viaDecodeLine, err)
		}
	}
}

// TestDecodeFastShapes: lines in other shapes are left to the JSON decoder,
// and the ones the fast path takes decode the same.
func TestDecodeFastShapes(t *testing.T) {
	const head = `{"v":1,"id":"e","at":"2026-01-01T00:00:00Z","actor":"a","op":"heartbeat","card":"A"`
	cases := []struct {
		obj  string
		fast bool
	}{
		{head + `}`, true},
		{head + `,"owner":"w\"q\\\/\b\f\n\r\t\u0000\u001f\u00e9\u2028\ud83d\ude00\uD83D\uDE00"}`, true},
		{head + `,"owner":"é✓😀` + "\x7f" + `"}`, true},
		{head + `,"progress":-17,"force":true}`, true},
		{head + `,"force":false}`, true},
		{head + `,"epoch":999999999999999999}`, true},
		{head + `,"checkpoint":[]}`, true},
		{head + `,"checkpoint":"s"}`, true},
		{head + `,"checkpoint":-0.0e+0}`, true},
		{head + `,"checkpoint":{"a":{"b":[[[]]]},"\u0041":"\ud800"}}`, true},
		{`{"v":1,"id":"e","at":"2026-02-28T23:59:59.5Z","actor":"a","op":"x","card":"A"}`, true},
		{`{"v":1,"id":"e","at":"2024-02-29T00:00:00.000000001Z","actor":"a","op":"x","card":"A"}`, true},
		{`{"v":1,"id":"e","at":"0000-01-01T00:00:00Z","actor":"a","op":"x","card":"A"}`, true},
		{`{"v":1,"id":"e","at":"9999-12-31T23:59:59.999999999Z","actor":"a","op":"x","card":"A"}`, true},
		{`{"v":0,"id":"","at":"2026-01-01T00:00:00Z","actor":"","op":"","card":""}`, true},
		{`{"v":0}`, false}, // v, id, at, actor, op and card are always written
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:00Z","op":"x","card":"A"}`, false},
		{`{"card":"A","id":"e"}`, false},                          // out of order
		{head + `,"owner":"a","owner":"b"}`, false},               // repeated key
		{head + `,"Owner":"a"}`, false},                           // case-folded key
		{head + `,"extra":1}`, false},                             // unknown key
		{head + `,"owner":"\ud800"}`, false},                      // lone surrogate
		{head + `,"owner":"\udc00\ud800"}`, false},                // reversed pair
		{head + `,"owner":"\ud800\u0041"}`, false},                // high surrogate, no low
		{head + `,"owner":"` + "\xff" + `"}`, false},              // invalid UTF-8
		{head + `,"owner":"` + "\xed\xa0\x80" + `"}`, false},      // encoded surrogate
		{head + `,"owner":"` + "\x01" + `"}`, false},              // raw control character
		{head + `,"owner":"\x"}`, false},                          // bad escape
		{head + `,"owner":"\u12"}`, false},                        // short escape
		{head + `, "owner":"a"}`, false},                          // whitespace
		{head + `,"owner" :"a"}`, false},                          // whitespace
		{head + `,"progress":1.0}`, false},                        // fraction
		{head + `,"progress":1e2}`, false},                        // exponent
		{head + `,"progress":01}`, false},                         // leading zero
		{head + `,"progress":-0}`, false},                         // negative zero
		{head + `,"progress":-}`, false},                          // no digits
		{head + `,"epoch":9223372036854775808}`, false},           // overflow
		{head + `,"epoch":1000000000000000000}`, false},           // 19 digits
		{head + `,"progress":null}`, false},                       // null
		{head + `,"checkpoint":null}`, false},                     // null raw message
		{head + `,"checkpoint":{"a" :1}}`, false},                 // whitespace in raw message
		{head + `,"checkpoint":[1,]}`, false},                     // invalid raw message
		{head + `,"checkpoint":01}`, false},                       // invalid number
		{head + `,"checkpoint":1.}`, false},                       // invalid number
		{head + `,"checkpoint":"` + "\xff" + `"}`, false},         // invalid UTF-8
		{head + `,"force":1}`, false},                             // not a bool
		{head + `,"fields":{"title":null}}`, false},               // null pointer
		{head + `,"fields":{"labels":null}}`, false},              // null slice
		{head + `,"fields":{"labels":["a",null]}}`, false},        // null element
		{head + `,"fields":{"labels":["a"],"title":"t"}}`, false}, // out of order
		{head + `,"fields":{"title":"a","title":"b"}}`, false},    // repeated
		{head + `,"fields":{"title":"a",}}`, false},               // trailing comma
		{head + `,"fields":{"priority":2,"max_attempts":3.5}}`, false},
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:00+00:00","actor":"a","op":"x","card":"A"}`, false}, // offset
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:00z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:00.Z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:00.1234567891Z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:60Z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2025-02-29T00:00:00Z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2026-01-01T24:00:00Z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2026-1-01T00:00:00Z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:0\u0030Z","actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":null,"actor":"a","op":"x","card":"A"}`, false},
		{`{"v":1,"id":"e","at":"2026-01-01T00:00:00Z","actor":"a","op":"x","card":"A","owner":"a}`, false},
		{`{}`, false},
	}
	for _, tc := range cases {
		line := frame(tc.obj)
		body := bytes.TrimSuffix(line, []byte{'\n'})
		if got := checkFast(t, body); got != tc.fast {
			t.Errorf("fast path took %s: %v, want %v", tc.obj, got, tc.fast)
		}
	}
	// Broken frames are never taken.
	for _, line := range []string{``, `{}`, `{"v":1,"crc":"0000000g"}`, `{"v":1,"crc":"00000000"]`, `{"v":1,"crc":"00000000"`,
		`{"v":1 "crc":"00000000"}`, `{,"crc":"00000000"}`, `{"v":1,"crc":"00000000"}}`, `{"owner":"a,"crc":"00000000"}`} {
		if checkFast(t, []byte(line)) {
			t.Errorf("fast path took %q", line)
		}
	}
}

// TestScanTime: scanTime agrees with time.Time.UnmarshalJSON on the times
// EncodeLine writes, across the calendar.
func TestScanTime(t *testing.T) {
	parseUTC := func(s string) (time.Time, bool) {
		ts, j := ScanTime([]byte(`"`+s+`"`), 0)
		return ts, j == len(s)+2
	}
	r := rand.New(rand.NewPCG(1, 2))
	min, max := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	for i := range 200_000 {
		sec := min + r.Int64N(max-min+1)
		if i%4 == 0 { // near the leap days and year ends that matter
			y := r.IntN(10000)
			sec = time.Date(y, time.Month(1+r.IntN(3)), 1, 0, 0, 0, 0, time.UTC).Unix() + r.Int64N(3*86400) - 86400
			sec = max64(min, min64(max, sec))
		}
		ts := time.Unix(sec, 0).UTC()
		switch r.IntN(3) {
		case 1:
			ts = ts.Add(time.Duration(r.IntN(1e9)))
		case 2:
			ts = ts.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		}
		s := ts.Format(time.RFC3339Nano)
		got, ok := parseUTC(s)
		var want time.Time
		if err := want.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("scanTime(%s) = %v %v, want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.1Z", "2026-12-31T00:00:00.000000000Z"} {
		got, ok := parseUTC(s)
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("scanTime(%s) = %v %v, want %v", s, got, ok, want)
		}
	}
}

func min64(a, b int64) int64 { return min(a, b) }
func max64(a, b int64) int64 { return max(a, b) }

// fastPieces are the bits random strings are made of: the characters JSON
// escapes, multi-byte and invalid UTF-8, and bits that look like the
// encoding's own structure.
var fastPieces = []string{"a", "bl-k3x9q2mf", " ", `"`, `\`, "/", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
	"é", "✓", "😀", "\u2028", "\u2029", "\ufffd", "\xff", "\xed\xa0\x80", "\xf0\x9f", "<script>", "&", `","crc":"`,
	`\u0041`, `\ud800`, "}", "{", "[", "]", ":", ","}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteString(fastPieces[r.IntN(len(fastPieces))])
	}
	return b.String()
}

func randomInt(r *rand.Rand) int64 {
	switch r.IntN(16) {
	case 0:
		return r.Int64() - math.MaxInt64/2
	case 1:
		return []int64{math.MaxInt64, math.MinInt64, 1e18 - 1, -1e18 + 1, 1e18, -1e18}[r.IntN(6)]
	case 2, 3:
		return -int64(r.IntN(1000))
	case 4, 5, 6:
		return 0
	}
	return int64(r.IntN(1000))
}

// fastIntOK is whether the fast path reads n: at most 18 digits.
func fastIntOK(n int64) bool { return n > -1e18 && n < 1e18 }

var randomCheckpoints = []string{`{}`, `[]`, `0`, `-1.5e-3`, `"x\"\\\/\b\f\n\r\t\u00e9"`, `true`, `false`,
	`{"a":[1,2,{"k":null}],"b":"😀"}`, `{ "spaced" : [ 1 , 2 ] }`, `[[[[[[]]]]]]`, `"\ud800"`, `1E+2`, `null`}

var randomLocations = []*time.Location{time.FixedZone("", 2*3600), time.FixedZone("X", -90*60), time.FixedZone("", 0)}

// randomValues draws the strings, integers and times that random events
// and cards are made of, clearing *plain when a value is outside the shape
// the fast paths must take.
type randomValues struct {
	r        *rand.Rand
	plain    *bool
	zoneOdds int // one time in zoneOdds is not in UTC
}

func (g randomValues) str() string { return randomString(g.r) }
func (g randomValues) maybe() bool { return g.r.IntN(3) == 0 }

func (g randomValues) integer() int64 {
	n := randomInt(g.r)
	if !fastIntOK(n) {
		*g.plain = false
	}
	return n
}

func (g randomValues) time() time.Time {
	ts := time.Unix(g.r.Int64N(253402300799+62135596800)-62135596800, int64(g.r.IntN(1e9)))
	switch g.r.IntN(4) {
	case 0:
		ts = ts.Truncate(time.Second)
	case 1:
		ts = ts.Truncate(time.Millisecond)
	}
	if g.r.IntN(g.zoneOdds) == 0 {
		*g.plain = false
		return ts.In(randomLocations[g.r.IntN(len(randomLocations))])
	}
	return ts.UTC()
}

// randomEvent builds an event from r. plain is whether its line is in the
// shape the fast path must take.
func randomEvent(r *rand.Rand) (ev *Event, plain bool) {
	plain = true
	g := randomValues{r: r, plain: &plain, zoneOdds: 8}
	str, integer, maybe, randTime := g.str, g.integer, g.maybe, g.time
	ev = &Event{V: int(integer()), ID: str(), At: randTime(), Actor: str(), Card: str()}
	if r.IntN(4) == 0 {
		c := randTime()
		ev.Clock = &c
	}
	if r.IntN(10) == 0 {
		ev.Op = Op(str())
	} else {
		ev.Op = Ops[r.IntN(len(Ops))]
	}
	if maybe() {
		ev.RequestID = str()
	}
	if maybe() {
		ev.ExpectVersion = integer()
	}
	if maybe() {
		ev.Epoch = integer()
	}
	if maybe() {
		ev.Owner = str()
	}
	if maybe() {
		ev.TTLSeconds = integer()
	}
	if maybe() {
		ev.Reason = str()
	}
	if maybe() {
		ev.To = str()
	}
	if maybe() {
		p := int(integer())
		ev.Progress = &p
	}
	if maybe() {
		c := randomCheckpoints[r.IntN(len(randomCheckpoints))]
		if c == "null" {
			plain = false
		}
		ev.Checkpoint = json.RawMessage(c)
	}
	ev.Force = maybe()
	if maybe() {
		f := &Fields{}
		strPtr := func() *string {
			if maybe() {
				s := str()
				return &s
			}
			return nil
		}
		intPtr := func() *int {
			if maybe() {
				n := int(integer())
				return &n
			}
			return nil
		}
		listPtr := func() *[]string {
			switch r.IntN(4) {
			case 0:
				return nil
			case 1:
				var l []string // encodes as null
				plain = false
				return &l
			}
			l := []string{}
			for range r.IntN(4) + r.IntN(2)*r.IntN(20) {
				l = append(l, str())
			}
			return &l
		}
		f.Title, f.Body, f.Phase, f.Priority = strPtr(), strPtr(), strPtr(), intPtr()
		f.Labels, f.DependsOn, f.Parent, f.Acceptance = listPtr(), listPtr(), strPtr(), listPtr()
		f.MaxAttempts = intPtr()
		if maybe() {
			d := randTime()
			f.DeferUntil = &d
		}
		if maybe() {
			f.IdempotencyKey = str()
		}
		ev.Fields = f
	}
	if maybe() {
		ev.Text = str()
	}
	if maybe() {
		ev.BackoffSeconds = integer()
	}
	if maybe() {
		ev.BackoffMaxSeconds = integer()
	}
	return ev, plain
}

// mutate changes line as muts says: each three bytes pick an edit (replace,
// insert, delete, swap with a neighbour), a position and a byte.
func mutate(line []byte, muts []byte) []byte {
	out := bytes.Clone(line)
	for ; len(muts) >= 3 && len(out) > 0; muts = muts[3:] {
		pos := int(muts[1]) * len(out) / 256
		switch muts[0] % 4 {
		case 0:
			out[pos] = muts[2]
		case 1:
			out = append(out[:pos], append([]byte{muts[2]}, out[pos:]...)...)
		case 2:
			out = append(out[:pos], out[pos+1:]...)
		case 3:
			if pos+1 < len(out) {
				out[pos], out[pos+1] = out[pos+1], out[pos]
			}
		}
	}
	return out
}

// corpusLines returns the lines stored in the FuzzDecodeLine corpus.
func corpusLines(t testing.TB) [][]byte {
	pattern := filepath.Join("testdata", "fuzz", "FuzzDecodeLine", "*")
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no corpus files match %s", pattern)
	}
	var lines [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if lit, ok := strings.CutPrefix(l, "[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(lit, ")")); err == nil {
					lines = append(lines, []byte(s))
				}
			}
		}
	}
	if len(lines) == 0 {
		t.Fatalf("the %d corpus files in %s hold no []byte input", len(files), pattern)
	}
	return lines
}

// FuzzDecodeFast compares the fast path with the JSON decoder on arbitrary
// bytes (data, framed too when it looks like an object) and on lines
// EncodeLine writes for random events (seed), as written and mutated (muts).
func FuzzDecodeFast(f *testing.F) {
	for _, l := range corpusLines(f) {
		f.Add(l, uint64(0), []byte(nil))
	}
	for _, ev := range append(opEvents(), roundTripEvents()...) {
		line, err := EncodeLine(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line, uint64(0), []byte(nil))
	}
	const head = `{"v":1,"id":"e","at":"2026-01-01T00:00:00Z","actor":"a","op":"create","card":"A"`
	for _, s := range []string{`"\"quoted\""`, `"back\\slash"`, `"\u00e9\u2028\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800"`,
		`"😀✓é"`, "\"\x01\"", "\"\xff\xfe\"", "\"\xed\xa0\x80\"", `"\/\b\f\n\r\t\u0000"`, `"a\"b\\c/d<e>&"`} {
		f.Add([]byte(head+`,"fields":{"title":`+s+`,"labels":[`+s+`,"x"]}}`), uint64(0), []byte(nil))
		f.Add([]byte(head+`,"owner":`+s+`,"checkpoint":[`+s+`]}`), uint64(0), []byte(nil))
	}
	for seed := range uint64(32) {
		f.Add([]byte(nil), seed+1, []byte(nil))
		f.Add([]byte(nil), seed+1, []byte{byte(seed), byte(seed * 37), byte(seed * 101)})
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, muts []byte) {
		checkFast(t, data)
		if obj := bytes.TrimSuffix(data, []byte{'\n'}); len(obj) >= 2 && obj[0] == '{' && obj[len(obj)-1] == '}' {
			checkFast(t, bytes.TrimSuffix(frame(string(obj)), []byte{'\n'}))
		}
		if seed == 0 {
			return
		}
		ev, plain := randomEvent(rand.New(rand.NewPCG(seed, seed>>32)))
		line, err := EncodeLine(ev)
		if err != nil {
			return // a time the encoder refuses
		}
		body := bytes.TrimSuffix(line, []byte{'\n'})
		if !checkFast(t, body) && plain {
			t.Fatalf("the fast path declined a line EncodeLine wrote:\n%q", line)
		}
		checkFast(t, mutate(body, muts))
	})
}

// TestDecodeFastOnGeneratedLines runs the random half of FuzzDecodeFast on
// many seeds, so the plain test run covers it too.
func TestDecodeFastOnGeneratedLines(t *testing.T) {
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	taken := 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed+1, 99))
		ev, plain := randomEvent(r)
		line, err := EncodeLine(ev)
		if err != nil {
			continue
		}
		body := bytes.TrimSuffix(line, []byte{'\n'})
		if checkFast(t, body) {
			taken++
		} else if plain {
			t.Fatalf("the fast path declined a line EncodeLine wrote:\n%q", line)
		}
		muts := make([]byte, 3*(1+r.IntN(3)))
		for i := range muts {
			muts[i] = byte(r.Uint32())
		}
		checkFast(t, mutate(body, muts))
	}
	if taken < n/2 {
		t.Fatalf("the fast path took only %d of %d generated lines", taken, n)
	}
}

// TestDecodeFastCorpus: the stored FuzzDecodeLine inputs decode the same
// either way, and the fast path takes some of them (a corpus it declines
// whole would compare nothing).
func TestDecodeFastCorpus(t *testing.T) {
	const minFastCorpus = 3 // what it takes of the stored corpus: fewer means it declines lines it took
	lines := corpusLines(t)
	taken := 0
	for _, l := range lines {
		if checkFast(t, bytes.TrimSuffix(l, []byte{'\n'})) {
			taken++
		}
	}
	t.Logf("the fast path took %d of %d corpus lines", taken, len(lines))
	if taken < minFastCorpus {
		t.Fatalf("the fast path took %d of %d corpus lines, want at least %d", taken, len(lines), minFastCorpus)
	}
}

func benchDecode(b *testing.B, ev *Event) {
	line, err := EncodeLine(ev)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := decodeFast(bytes.TrimSuffix(line, []byte{'\n'})); !ok {
		b.Fatalf("the fast path declines %s", line)
	}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeLine(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLineClaim(b *testing.B) {
	benchDecode(b, &Event{V: 1, ID: "9f2c51d0a4b7e361", At: t0, Actor: "alice@host", Op: OpClaim, Card: "bl-k3x9q2mf",
		ExpectVersion: 3, Epoch: 2, Owner: "agent-7", TTLSeconds: 600})
}

func BenchmarkDecodeLineHeartbeat(b *testing.B) {
	benchDecode(b, &Event{V: 1, ID: "9f2c51d0a4b7e361", At: t0.Add(123456789), Actor: "alice@host", Op: OpHeartbeat, Card: "bl-k3x9q2mf",
		Epoch: 2, Owner: "agent-7", TTLSeconds: 600, Progress: intp(40)})
}

func BenchmarkDecodeLineCreate(b *testing.B) {
	benchDecode(b, &Event{V: 1, ID: "9f2c51d0a4b7e361", At: t0.Add(123456789), Actor: "alice@host", Op: OpCreate, Card: "bl-k3x9q2mf",
		RequestID: "req-1", Fields: &Fields{Title: strp(`Fix the "login" redirect loop`), Body: strp("Steps:\n1. log in\n2. watch it loop"),
			Priority: intp(2), Labels: strs("auth", "bug"), DependsOn: strs("bl-a1b2c3d4"), Acceptance: strs("no loop after login")}})
}

// BenchmarkUnmarshalEvent is the JSON decoder alone on a claim line, the
// cost the fast path avoids.
func BenchmarkUnmarshalEvent(b *testing.B) {
	line, err := EncodeLine(&Event{V: 1, ID: "9f2c51d0a4b7e361", At: t0, Actor: "alice@host", Op: OpClaim, Card: "bl-k3x9q2mf",
		ExpectVersion: 3, Epoch: 2, Owner: "agent-7", TTLSeconds: 600})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLine(b *testing.B) {
	line, err := EncodeLine(&Event{V: 1, ID: "9f2c51d0a4b7e361", At: t0, Actor: "alice@host", Op: OpClaim, Card: "bl-k3x9q2mf",
		RequestID: "req-123", ExpectVersion: 3, Epoch: 2, Owner: "agent-7", TTLSeconds: 600})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeLine(line); err != nil {
			b.Fatal(err)
		}
	}
}

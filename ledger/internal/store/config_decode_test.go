package store

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// checkConfig compares decodeConfig with the JSON decoder on data, and
// reports whether the fast path took it.
func checkConfig(t *testing.T, data []byte) bool {
	t.Helper()
	want := Config{Version: 1}
	werr := json.Unmarshal(data, &want)
	c := Config{Version: 1}
	taken := configObject(data, wire.SkipSpace(data, 0), configMembers(data, &c))
	fast := taken >= 0 && wire.SkipSpace(data, taken) == len(data)
	if fast && werr != nil {
		t.Fatalf("the fast path took %q, which the JSON decoder refuses: %v", data, werr)
	}
	if fast && !reflect.DeepEqual(c, want) {
		t.Fatalf("decodeConfig and the JSON decoder disagree on %q:\nfast: %+v\njson: %+v", data, c, want)
	}
	got := Config{Version: 1}
	gerr := decodeConfig(data, &got)
	if k := configRepeatedKey(data); k != "" && werr == nil {
		if gerr == nil || !strings.Contains(gerr.Error(), "twice") {
			t.Fatalf("decodeConfig(%q) = %+v, %v; want a refusal of the repeated %q", data, got, gerr, k)
		}
		return fast
	}
	if (gerr == nil) != (werr == nil) || werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeConfig(%q) = %+v, %v; the JSON decoder gives %+v, %v", data, got, gerr, want, werr)
	}
	return fast
}

// TestDecodeConfig: config.json as people write it is read without the
// JSON decoder, and to the same Config; what it leaves, the JSON decoder
// reads.
func TestDecodeConfig(t *testing.T) {
	cases := []struct {
		data string
		fast bool
	}{
		{`{}`, true},
		{"{\"version\":1}\n", true},
		{`{"version":1,"compact_bytes":-1}`, true},
		{" {\n  \"version\": 2,\n  \"compact_bytes\": 1048576,\n  \"sync\": {\"auto\": \"push\", \"remote\": \"origin\", \"branch\": \"bl\", \"board\": \"BOARD.md\"},\n  \"claims\": { \"remote\" : \"origin\" },\n  \"retry_backoff\": {\"initial\": \"0s\", \"max\": \"2h\"}\n}\n", true},
		{`{"hooks":{"post":[{"cmd": "echo hi"}]},"version":1}`, true},
		{`{"future":{"a":[1,2,{"b":null}]},"other":"x","n":1.5e3,"version":3}`, true},
		{`{"sync":{"auto":"c\u006fmmit","extra":true}}`, true},
		{`{"sync":{}, "claims":{}}`, true},
		{`{"version":null}`, false},
		{`{"hooks":null}`, false},
		{`{"version":1,"version":2}`, false},
		{`{"hooks":{"a":1,"a":2},"version":1}`, true},
		{`{"claims":{"remote":"origin","remote":"/tmp/elsewhere"}}`, false},
		{`{"claims":{"remote":"origin","Remote":"/tmp/elsewhere"}}`, false},
		{`{"sync":{"board":"BOARD.md","bo\u0061rd":"x.md"}}`, false},
		{`{"Version":2}`, false},
		{`{"sync":{"Auto":"push"}}`, false},
		{`{"ſync":{"auto":"push"}}`, false},
		{`{"vers\u0069on":2}`, false},
		{`{"version":1.0}`, false},
		{`{"version":"1"}`, false},
		{`{"compact_bytes":1e6}`, false},
		{`{"compact_bytes":10000000000000000000}`, false},
		{`{"sync":"push"}`, false},
		{`{"sync":{"auto":1}}`, false},
		{`{"version":1,}`, false},
		{`{"version":1} x`, false},
		{`[]`, false},
		{``, false},
		{`{"hooks":"\ud800"}`, false},
	}
	for _, tc := range cases {
		if got := checkConfig(t, []byte(tc.data)); got != tc.fast {
			t.Errorf("fast path took %q: %v, want %v", tc.data, got, tc.fast)
		}
	}
}

// FuzzDecodeConfig: whatever config.json holds, decodeConfig gives what
// the JSON decoder gives.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"version":1,"compact_bytes":-1,"sync":{"auto":"push"},"claims":{"remote":"o"},"retry_backoff":{"max":"1h"},"hooks":[1]}`))
	f.Add([]byte(strings.Repeat(" ", 3) + `{"x":{"y":[true,false,null,"\u00e9"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkConfig(t, data)
	})
}

// TestConfigRepeatedKeyOutsideWhatBlReads: a name repeated inside hooks or
// a member bl does not know is no value bl reads, so it is no reason to
// refuse the file; and whether it is refused must not hang on another
// member (review, worktree, epics) sending the file to the JSON decoder.
func TestConfigRepeatedKeyOutsideWhatBlReads(t *testing.T) {
	for _, data := range []string{
		`{"version":1,"hooks":{"post-claim":[{"env":{"FOO":"1","foo":"2"}}]}}`,
		`{"version":1,"review":{"required":true},"hooks":{"post-claim":[{"env":{"FOO":"1","foo":"2"}}]}}`,
		`{"version":1,"hooks":{"a":1,"a":2}}`,
		`{"version":1,"worktree":{"branch":"w/{id}"},"future":{"a":1,"A":2}}`,
		`{"version":1,"epics":{"auto_close":true},"future":[{"x":1,"x":2}]}`,
		`{"future":1,"Future":2,"review":{}}`,
		`{"future":1,"future":2}`,
		`{"sync":{"x":1,"x":2}}`,
	} {
		var c Config
		if err := decodeConfig([]byte(data), &c); err != nil {
			t.Errorf("decodeConfig(%s): %v", data, err)
		}
	}
	for _, data := range []string{
		`{"version":1,"review":{"required":true,"Required":false}}`,
		`{"version":1,"epics":{"auto_close":true,"auto_close":false}}`,
		`{"worktree":{"branch":"a"},"Worktree":{"branch":"b"}}`,
		`{"version":1,"hooks":{},"HOOKS":{}}`,
		`{"sync":{"x":1,"Auto":"push","auto":"commit"}}`,
		`{"epics":{"wait_for_children":true},"claims":{"remote":"a","rem\u006fte":"b"}}`,
	} {
		var c Config
		if err := decodeConfig([]byte(data), &c); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("decodeConfig(%s) = %v, want a refusal of the repeated name", data, err)
		}
	}
}

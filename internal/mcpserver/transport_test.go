package mcpserver

import (
	"encoding/json"
	"testing"
)

func TestDecodeLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		msg  bool  // passed on to the server
		code int64 // else the error answered (0: dropped, or a tool error)
		tool bool  // answered as a tool error
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true, 0, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true, 0, false},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, true, 0, false},
		{`{garbage`, false, -32700, false},
		{``, false, -32700, false},
		{`[]`, false, -32600, false},
		{`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, false, -32600, false},
		{`42`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":-7,"method":"tools/list"}`, true, 0, false},
		{`{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}`, true, 0, false},
		{`{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/list"}`, true, 0, false},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":1e20,"method":"tools/list"}`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":-1e300,"method":"tools/list"}`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":1.5,"result":{}}`, false, 0, false},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, false, -32600, false},
		{`{"jsonrpc":"2.0","id":1}`, false, -32600, false},
		{`{"jsonrpc":"2.0"}`, false, 0, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"title":"\ud800"}}}`, false, 0, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"title":"\udc00\ud800"}}}`, false, 0, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"arguments\":{\"title\":\"\xff\"}}}", false, 0, true},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"\ud800"}}`, false, -32602, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"title":"\ud83d\ude00 \\ud800 ok"}}}`, true, 0, false},
	} {
		msg, reply := decodeLine([]byte(tc.line))
		if (msg != nil) != tc.msg {
			t.Errorf("%s: message %v, want %v", tc.line, msg != nil, tc.msg)
			continue
		}
		if tc.msg || (tc.code == 0 && !tc.tool) {
			if reply != nil {
				t.Errorf("%s: unexpected reply %s", tc.line, reply)
			}
			continue
		}
		var r struct {
			Error *struct {
				Code int64 `json:"code"`
			} `json:"error"`
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(reply, &r); err != nil {
			t.Errorf("%s: reply %s is not JSON", tc.line, reply)
			continue
		}
		switch {
		case tc.tool && (r.Result == nil || !r.Result.IsError):
			t.Errorf("%s: reply %s, want a tool error", tc.line, reply)
		case !tc.tool && (r.Error == nil || r.Error.Code != tc.code):
			t.Errorf("%s: reply %s, want error %d", tc.line, reply, tc.code)
		}
	}
}

// FuzzDecodeLine: any line is passed on, answered with valid JSON, or
// dropped; never a panic.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{`{garbage`, `[1]`, `{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":"\ud800"}}`, `{"id":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		_, reply := decodeLine(line)
		if reply != nil && !json.Valid(reply) {
			t.Fatalf("reply %q is not JSON", reply)
		}
	})
}

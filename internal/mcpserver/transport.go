package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"unicode/utf8"

	json "github.com/goccy/go-json"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is stdio MCP (one JSON-RPC message per line) that reads the
// lines itself, so that a line the SDK would die of is answered here with
// the JSON-RPC error the spec asks for and the server keeps serving: a line
// that is not JSON gets -32700, a batch array or a message that is not a
// valid request (an id that is an object, no method) gets -32600. When the
// client goes away (stdin ends), gone is cancelled: a tool call still
// running (a claim waiting for a card) ends with it. Every request read
// before the end is still answered before the server stops: a client that
// pipes its requests and closes stdin gets all its replies.
type lineTransport struct {
	r    io.Reader
	w    io.Writer
	gone context.CancelFunc
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{w: t.w, gone: t.gone, lines: make(chan []byte), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]bool{}, answered: make(chan struct{}, 1)}
	go c.readLines(t.r)
	return c, nil
}

type lineConn struct {
	w      io.Writer
	wmu    sync.Mutex
	gone   context.CancelFunc
	lines  chan []byte // closed when stdin ends
	closed chan struct{}
	once   sync.Once

	// The SDK stops answering once Read reports the end, so Read holds
	// the end back until every request it handed over has its response
	// written (or writing failed: nobody reads the answers any more).
	mu       sync.Mutex
	pending  map[jsonrpc.ID]bool // requests read, not yet answered
	wfailed  bool
	answered chan struct{} // a response was written (or failed)
}

// maxLine bounds one message, as the SDK's own stdio transport does.
const maxLine = 16 << 20

func (c *lineConn) readLines(r io.Reader) {
	defer close(c.lines)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			select {
			case c.lines <- line:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line; a line over maxLine is cut there (and fails to
// parse, which is answered, rather than buffered without end).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) <= maxLine {
			line = append(line, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var line []byte
		var ok bool
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case line, ok = <-c.lines:
			if !ok {
				if c.gone != nil {
					c.gone()
				}
				return nil, c.drain(ctx)
			}
		}
		msg, reply := decodeLine(line)
		if reply == nil {
			reply = c.track(msg)
		}
		if reply != nil {
			if err := c.writeRaw(reply); err != nil {
				return nil, err
			}
			continue
		}
		if msg != nil {
			return msg, nil
		}
	}
}

// track notes a request handed to the server as waiting for its answer; a
// request whose id is already waiting is answered here with -32600 (the
// server could not tell the two answers apart).
func (c *lineConn) track(msg jsonrpc.Message) (reply []byte) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[req.ID] {
		id, _ := json.Marshal(req.ID.Raw())
		return errorReply(id, jsonrpc.CodeInvalidRequest, "invalid request: id is already used by a request not yet answered")
	}
	c.pending[req.ID] = true
	return nil
}

// drain waits, at the end of stdin, until every request read has been
// answered, and then reports the end.
func (c *lineConn) drain(ctx context.Context) error {
	for {
		c.mu.Lock()
		done := len(c.pending) == 0 || c.wfailed
		c.mu.Unlock()
		if done {
			return io.EOF
		}
		select {
		case <-c.answered:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return io.EOF
		}
	}
}

// envelope is what every JSON-RPC message has, read before the SDK sees it.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// decodeLine turns a line into a message for the server, or into the
// error response to write back (reply), or into nothing (a malformed
// response or notification, which gets no answer).
func decodeLine(line []byte) (msg jsonrpc.Message, reply []byte) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
	}
	if line[0] == '[' {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one message per line")
	}
	var env envelope
	if line[0] != '{' || json.Unmarshal(line, &env) != nil {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: a message is a JSON object")
	}
	id, idOK := validID(env.ID)
	if !idOK {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: id must be a string or a number")
	}
	if !exactID(id) {
		if env.Method == nil {
			return nil, nil // a response to no call of ours
		}
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, "invalid request: a number id must be a whole number of at most 2^53-1")
	}
	isRequest := env.Method != nil && env.ID != nil
	if env.JSONRPC != "2.0" {
		if isRequest {
			return nil, errorReply(id, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		}
		return nil, nil
	}
	if env.Method == nil && env.Result == nil && env.Error == nil {
		if env.ID != nil {
			return nil, errorReply(id, jsonrpc.CodeInvalidRequest, "invalid request: no method")
		}
		return nil, nil
	}
	if !utf8.Valid(line) || loneSurrogate(line) {
		// The command line refuses such text (exit 2); so does a tool
		// call, in the shape of every tool error, before it is decoded
		// (decoding would turn it into U+FFFD).
		switch {
		case !isRequest:
			return nil, nil
		case *env.Method == "tools/call":
			return nil, toolErrorReply(id, usageError("the arguments are not valid UTF-8 text (invalid bytes or a lone surrogate escape)"))
		default:
			return nil, errorReply(id, jsonrpc.CodeInvalidParams, "invalid params: not valid UTF-8 text")
		}
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		if isRequest {
			return nil, errorReply(id, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		}
		return nil, nil
	}
	return m, nil
}

// validID reports whether raw is a valid request id (absent, a string, a
// number) and returns it as JSON to echo in an error.
func validID(raw json.RawMessage) (json.RawMessage, bool) {
	if raw == nil {
		return nil, true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	switch v.(type) {
	case string, float64:
		return raw, true
	}
	return nil, false
}

// maxExactID is the largest whole number a float64 (and a JavaScript
// client) holds exactly.
const maxExactID = 1<<53 - 1

// exactID reports whether id, valid, would be answered under itself: the
// SDK keeps a number id as the int64 of its float64 value, so 1.5 would be
// answered as 1 and 1e20 as -9223372036854775808 (and taken for another
// id still waiting).
func exactID(id json.RawMessage) bool {
	var v any
	if id == nil || json.Unmarshal(id, &v) != nil {
		return true
	}
	f, ok := v.(float64)
	return !ok || (f == math.Trunc(f) && math.Abs(f) <= maxExactID)
}

// loneSurrogate reports whether b, valid JSON, holds a \u escape of a
// UTF-16 surrogate that is not half of a pair.
func loneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escaped character, maybe a backslash
			continue
		}
		r := hex4(b[i+2:])
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if len(b) < i+12 || b[i+6] != '\\' || b[i+7] != 'u' {
				return true
			}
			if lo := hex4(b[i+8:]); lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

// hex4 is the value of four hex digits at the start of b (-1 if not).
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n := 0
	for _, c := range b[:4] {
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return -1
		}
		n = n*16 + d
	}
	return n
}

// toolErrorReply is the result of a tools/call that failed: e, the error
// object, as text and as structured content.
func toolErrorReply(id json.RawMessage, e errorObject) []byte {
	text, _ := json.Marshal(e)
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": string(text)}},
		"structuredContent": e,
		"isError":           true,
	}})
	return b
}

func errorReply(id json.RawMessage, code int64, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err == nil {
		err = c.writeRaw(b)
	}
	if resp, ok := msg.(*jsonrpc.Response); ok || err != nil {
		c.mu.Lock()
		if ok {
			delete(c.pending, resp.ID)
		}
		c.wfailed = c.wfailed || err != nil
		c.mu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return err
}

func (c *lineConn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return errors.New("connection closed")
	default:
	}
	_, err := c.w.Write(append(b, '\n'))
	return err
}

func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }

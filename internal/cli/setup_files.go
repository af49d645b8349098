package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	json "github.com/goccy/go-json"
)

// The settings files bl setup merges into: JSON kept in its key order (a
// user's file is rewritten with only bl's entry changed), and the one TOML
// table Codex reads, edited as text.

// jsonObject is a JSON object that keeps its keys' order.
type jsonObject struct {
	keys []string
	vals map[string]any
}

func newJSONObject() *jsonObject { return &jsonObject{vals: map[string]any{}} }

func (o *jsonObject) get(k string) any { return o.vals[k] }

func (o *jsonObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *jsonObject) remove(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// object is the object at key k, made when missing (a value of another
// type there is replaced only by callers that check first).
func (o *jsonObject) object(k string) *jsonObject {
	if sub, ok := o.vals[k].(*jsonObject); ok {
		return sub
	}
	sub := newJSONObject()
	o.set(k, sub)
	return sub
}

// removePath removes key k of the object at parent, and the parent when
// that leaves it empty.
func (o *jsonObject) removePath(parent, k string) {
	sub, ok := o.vals[parent].(*jsonObject)
	if !ok {
		return
	}
	sub.remove(k)
	if len(sub.keys) == 0 {
		o.remove(parent)
	}
}

// editJSON applies edit to the JSON object in old (an empty object when
// the file does not exist) and returns the new file, or nil when the
// object ends empty (the file is then removed, or not made).
func editJSON(old []byte, exists bool, edit func(*jsonObject)) ([]byte, error) {
	doc := newJSONObject()
	if exists && len(bytes.TrimSpace(old)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(old))
		dec.UseNumber()
		v, err := decodeOrdered(dec)
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, errors.New("not valid JSON: more after the object")
		}
		o, ok := v.(*jsonObject)
		if !ok {
			return nil, errors.New("not a JSON object")
		}
		doc = o
	}
	for _, k := range []string{"mcpServers", "hooks"} {
		if v, ok := doc.vals[k]; ok {
			if _, isObj := v.(*jsonObject); !isObj {
				return nil, fmt.Errorf("%q is not an object", k)
			}
		}
	}
	edit(doc)
	if len(doc.keys) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	writeOrdered(&b, doc, "")
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newJSONObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				if _, dup := o.vals[k]; dup {
					return nil, fmt.Errorf("key %q appears twice", k)
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

func writeOrdered(b *bytes.Buffer, v any, indent string) {
	in := indent + "  "
	switch t := v.(type) {
	case *jsonObject:
		if len(t.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range t.keys {
			b.WriteString(in)
			writeScalar(b, k)
			b.WriteString(": ")
			writeOrdered(b, t.vals[k], in)
			if i < len(t.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range t {
			b.WriteString(in)
			writeOrdered(b, e, in)
			if i < len(t)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		writeScalar(b, v)
	}
}

func writeScalar(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// codexTable is the TOML table Codex reads bl's server from.
const codexTable = "mcp_servers.bl"

// editTOMLServer sets (or removes) the [mcp_servers.bl] table of a Codex
// config.toml. Without a TOML parser in bl, the file is checked line by
// line for the shapes TOML allows (tables, key = value, multi-line arrays
// and strings, comments); anything else is refused rather than guessed
// at, and so is a bl server defined another way (dotted keys, inline).
func editTOMLServer(old []byte, args []any, remove bool) ([]byte, error) {
	lines := strings.SplitAfter(string(old), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var kept []string
	inBl := false
	open := 0   // brackets and braces open in a multi-line value
	inStr := "" // the delimiter of a multi-line string being read
	for n, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case inStr != "":
			if strings.Contains(t, inStr) {
				inStr = ""
			}
		case open > 0:
			open += tomlDepth(t)
		case t == "" || strings.HasPrefix(t, "#"):
		case strings.HasPrefix(t, "["):
			name := strings.Trim(strings.SplitN(t, "#", 2)[0], " \t")
			if !strings.HasSuffix(name, "]") {
				return nil, fmt.Errorf("line %d: a table header that does not end in ]", n+1)
			}
			name = strings.Trim(name, "[] \t")
			name = strings.ReplaceAll(strings.ReplaceAll(name, `"`, ""), " ", "")
			inBl = name == codexTable || strings.HasPrefix(name, codexTable+".")
			if inBl {
				continue
			}
		default:
			key, val, ok := strings.Cut(t, "=")
			if !ok || strings.TrimSpace(key) == "" {
				return nil, fmt.Errorf("line %d is not TOML (neither a table nor key = value)", n+1)
			}
			k := strings.ReplaceAll(strings.TrimSpace(key), `"`, "")
			if !inBl && (strings.HasPrefix(k, "mcp_servers.bl") || k == "mcp_servers" && strings.Contains(val, "bl")) {
				return nil, fmt.Errorf("line %d defines the bl server in a form bl setup does not edit; use a [%s] table", n+1, codexTable)
			}
			v := strings.TrimSpace(val)
			for _, q := range []string{`"""`, `'''`} {
				if strings.HasPrefix(v, q) && !strings.Contains(v[3:], q) {
					inStr = q
				}
			}
			if inStr == "" {
				open = tomlDepth(v)
			}
		}
		if !inBl {
			kept = append(kept, l)
		}
	}
	if open != 0 || inStr != "" {
		return nil, errors.New("a value is not closed at the end of the file")
	}
	out := strings.Join(kept, "")
	if remove {
		if strings.TrimSpace(out) == "" {
			return nil, nil
		}
		if out != string(old) {
			out = strings.TrimRight(out, "\n") + "\n"
		}
		return []byte(out), nil
	}
	var quoted []string
	for _, a := range args {
		b, _ := json.Marshal(a)
		quoted = append(quoted, string(b))
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if strings.TrimSpace(out) != "" && !strings.HasSuffix(out, "\n\n") {
		out += "\n"
	}
	out += "[" + codexTable + "]\ncommand = \"bl\"\nargs = [" + strings.Join(quoted, ", ") + "]\n"
	return []byte(out), nil
}

// tomlDepth is how many brackets and braces a value leaves open, strings
// and comments aside.
func tomlDepth(v string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return depth
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		}
	}
	return depth
}

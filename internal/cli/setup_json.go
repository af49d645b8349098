package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	json "github.com/goccy/go-json"
)

// The JSON settings files bl setup edits are changed in place: bl's own
// entry is inserted, replaced or cut out as bytes, and every other byte of
// the file (the user's members, their order, indentation and comments)
// stays as it was, so that --remove after setup gives the file back byte
// for byte. gemini-cli reads its settings as JSON with comments and
// trailing commas, so such a file (jsonc) is read that way too; the
// others must be strict JSON, as their runtimes read them.

// jsonNode is one value of a settings file, with where it lies in it.
type jsonNode struct {
	kind       byte // '{', '[', or 'v' for a scalar
	start, end int  // the value's bytes: src[start:end]
	members    []jsonMember
	elems      []*jsonNode
}

// jsonMember is one member of an object: its key and where the key starts.
type jsonMember struct {
	key      string
	keyStart int
	val      *jsonNode
}

// member is o's member named key, or -1.
func (n *jsonNode) member(key string) int {
	for i, m := range n.members {
		if m.key == key {
			return i
		}
	}
	return -1
}

// jsonDoc is a settings file being edited.
type jsonDoc struct {
	src   []byte
	jsonc bool
	nl    string // the file's line end, kept in what is inserted
	root  *jsonNode
}

// parseJSONDoc reads a settings file. An empty (or absent) file is an
// empty object; anything but one object is refused.
func parseJSONDoc(src []byte, jsonc bool) (*jsonDoc, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}\n")
	}
	d := &jsonDoc{src: src, jsonc: jsonc, nl: "\n"}
	if bytes.Contains(src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	if err := d.reparse(); err != nil {
		return nil, err
	}
	return d, nil
}

// reparse rebuilds the node tree after an edit, and checks the whole file
// with encoding/json: a file bl setup reads or writes is valid JSON (after
// comments and trailing commas, for jsonc) with no key twice.
func (d *jsonDoc) reparse() error {
	clean, err := stripJSONC(d.src, d.jsonc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("not valid JSON: more after the object")
	}
	p := jsonParser{s: clean}
	root, err := p.value()
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if root.kind != '{' {
		return errors.New("not a JSON object")
	}
	d.root = root
	return nil
}

// value is the decoded value of n.
func (d *jsonDoc) value(n *jsonNode) any {
	clean, _ := stripJSONC(d.src[n.start:n.end], d.jsonc)
	var v any
	_ = json.Unmarshal(clean, &v)
	return v
}

// splice replaces src[from:to] with text and reparses.
func (d *jsonDoc) splice(from, to int, text string) error {
	out := make([]byte, 0, len(d.src)+len(text))
	out = append(out, d.src[:from]...)
	out = append(out, text...)
	out = append(out, d.src[to:]...)
	d.src = out
	return d.reparse()
}

// lookup is the object at path below the root, or nil.
func (d *jsonDoc) lookup(path ...string) *jsonNode {
	n := d.root
	for _, k := range path {
		i := n.member(k)
		if i < 0 || n.members[i].val.kind != '{' {
			return nil
		}
		n = n.members[i].val
	}
	return n
}

// set makes the member key of the object at path hold v, making the
// objects on the way. A member already holding v is left as it is.
func (d *jsonDoc) set(path []string, key string, v any) error {
	parent := d.root
	for depth, k := range path {
		i := parent.member(k)
		if i < 0 {
			// Make the rest of the path as one nested value.
			var nested any = orderedObject{{key, v}}
			for j := len(path) - 1; j > depth; j-- {
				nested = orderedObject{{path[j], nested}}
			}
			return d.insertMember(parent, k, nested)
		}
		if parent.members[i].val.kind != '{' {
			return fmt.Errorf("%q is not an object", strings.Join(append(path[:depth:depth], k), "."))
		}
		parent = parent.members[i].val
	}
	if i := parent.member(key); i >= 0 {
		old := parent.members[i].val
		if reflect.DeepEqual(d.value(old), normalJSON(v)) {
			return nil
		}
		indent := lineIndent(d.src, parent.members[i].keyStart)
		return d.splice(old.start, old.end, d.format(v, indent))
	}
	return d.insertMember(parent, key, v)
}

// insertMember adds key: v as the last member of object o.
func (d *jsonDoc) insertMember(o *jsonNode, key string, v any) error {
	k, _ := json.Marshal(key)
	if len(o.members) == 0 {
		outer := lineIndent(d.src, o.start)
		indent := outer + d.unit()
		text := d.nl + indent + string(k) + ": " + d.format(v, indent) + d.nl + outer
		return d.splice(o.start+1, o.end-1, text)
	}
	last := o.members[len(o.members)-1]
	indent := lineIndent(d.src, last.keyStart)
	if indent == "" && !startsLine(d.src, last.keyStart) {
		// A one-line object stays on one line.
		return d.splice(last.val.end, last.val.end, ", "+string(k)+": "+compactJSON(v))
	}
	return d.splice(last.val.end, last.val.end, ","+d.nl+indent+string(k)+": "+d.format(v, indent))
}

// remove cuts the member key out of the object at path, and then each
// object on the path that this leaves empty. Absent members are no error.
func (d *jsonDoc) remove(path []string, key string) error {
	o := d.lookup(path...)
	if o == nil {
		return nil
	}
	i := o.member(key)
	if i < 0 {
		return nil
	}
	if err := d.cut(o, i); err != nil {
		return err
	}
	for len(path) > 0 {
		if o = d.lookup(path...); o == nil || len(o.members) > 0 {
			return nil
		}
		key, path = path[len(path)-1], path[:len(path)-1]
		parent := d.lookup(path...)
		if err := d.cut(parent, parent.member(key)); err != nil {
			return err
		}
	}
	return nil
}

// cut removes member i of object o, with the comma and space that
// separate it from its neighbours (the same bytes insertMember adds).
func (d *jsonDoc) cut(o *jsonNode, i int) error {
	switch {
	case len(o.members) == 1:
		return d.splice(o.start+1, o.end-1, "")
	case i > 0:
		return d.splice(o.members[i-1].val.end, o.members[i].val.end, "")
	default:
		return d.splice(o.members[0].keyStart, o.members[1].keyStart, "")
	}
}

// cutElem removes element i of array a, as cut does for a member.
func (d *jsonDoc) cutElem(a *jsonNode, i int) error {
	switch {
	case len(a.elems) == 1:
		return d.splice(a.start+1, a.end-1, "")
	case i > 0:
		return d.splice(a.elems[i-1].end, a.elems[i].end, "")
	default:
		return d.splice(a.elems[0].start, a.elems[1].start, "")
	}
}

// appendElem adds v as the last element of array a.
func (d *jsonDoc) appendElem(a *jsonNode, v any) error {
	if len(a.elems) == 0 {
		outer := lineIndent(d.src, a.start)
		indent := outer + d.unit()
		return d.splice(a.start+1, a.end-1, d.nl+indent+d.format(v, indent)+d.nl+outer)
	}
	last := a.elems[len(a.elems)-1]
	indent := lineIndent(d.src, last.start)
	if indent == "" && !startsLine(d.src, last.start) {
		return d.splice(last.end, last.end, ", "+compactJSON(v))
	}
	return d.splice(last.end, last.end, ","+d.nl+indent+d.format(v, indent))
}

// unit is the file's indentation step: the indent of the root's first
// member, or two spaces.
func (d *jsonDoc) unit() string {
	if len(d.root.members) > 0 {
		if in := lineIndent(d.src, d.root.members[0].keyStart); in != "" {
			return in
		}
	}
	return "  "
}

// format is v as indented JSON for a place whose line starts with indent.
func (d *jsonDoc) format(v any, indent string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, d.unit())
	_ = enc.Encode(v)
	return strings.ReplaceAll(strings.TrimSuffix(b.String(), "\n"), "\n", d.nl)
}

func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// normalJSON is v as encoding/json decodes it, to compare with a file's value.
func normalJSON(v any) any {
	var out any
	_ = json.Unmarshal([]byte(compactJSON(v)), &out)
	return out
}

// orderedObject is a JSON object written in its members' order.
type orderedObject []struct {
	Key string
	Val any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.Val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// lineIndent is the run of spaces and tabs that starts the line holding
// offset i, when only that run stands before i on it; "" otherwise.
func lineIndent(src []byte, i int) string {
	j := i
	for j > 0 && (src[j-1] == ' ' || src[j-1] == '\t') {
		j--
	}
	if j > 0 && src[j-1] != '\n' {
		return ""
	}
	return string(src[j:i])
}

// startsLine reports whether only spaces and tabs stand before offset i on its line.
func startsLine(src []byte, i int) bool {
	j := i
	for j > 0 && (src[j-1] == ' ' || src[j-1] == '\t') {
		j--
	}
	return j == 0 || src[j-1] == '\n'
}

// stripJSONC blanks comments and trailing commas with spaces (newlines
// kept), so that offsets in the result are offsets in src. For strict
// JSON it only checks there are none.
func stripJSONC(src []byte, jsonc bool) ([]byte, error) {
	out := bytes.Clone(src)
	lastComma := -1 // a comma not yet followed by a value
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case c == '"':
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			lastComma = -1
		case c == '/' && i+1 < len(out) && (out[i+1] == '/' || out[i+1] == '*'):
			if !jsonc {
				return nil, errors.New("not valid JSON: a comment (this runtime reads plain JSON)")
			}
			end := len(out)
			if out[i+1] == '/' {
				if k := bytes.IndexByte(out[i:], '\n'); k >= 0 {
					end = i + k
				}
			} else {
				k := bytes.Index(out[i+2:], []byte("*/"))
				if k < 0 {
					return nil, errors.New("not valid JSON: a /* comment that does not end")
				}
				end = i + 2 + k + 2
			}
			for j := i; j < end; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i = end - 1
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 && jsonc {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out, nil
}

// jsonParser finds where each value of a (checked, comment-free) JSON
// text lies; encoding/json has already said the text is valid.
type jsonParser struct {
	s []byte
	i int
}

func (p *jsonParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *jsonParser) value() (*jsonNode, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, errors.New("unexpected end")
	}
	n := &jsonNode{start: p.i}
	var err error
	switch p.s[p.i] {
	case '{':
		n.kind = '{'
		err = p.object(n)
	case '[':
		n.kind = '['
		err = p.array(n)
	case '"':
		n.kind = 'v'
		p.str()
	default:
		n.kind = 'v'
		for p.i < len(p.s) && strings.IndexByte(" \t\r\n,]}", p.s[p.i]) < 0 {
			p.i++
		}
	}
	if err != nil {
		return nil, err
	}
	n.end = p.i
	return n, nil
}

// object reads an object's members into n, from its '{' past its '}'.
func (p *jsonParser) object(n *jsonNode) error {
	p.i++
	for {
		p.space()
		if p.s[p.i] == '}' {
			p.i++
			return nil
		}
		if p.s[p.i] == ',' {
			p.i++
			continue
		}
		keyStart := p.i
		p.str()
		var key string
		if err := json.Unmarshal(p.s[keyStart:p.i], &key); err != nil {
			return err
		}
		if n.member(key) >= 0 {
			// Readers differ on which one counts: refuse rather than
			// edit one and leave the other in force.
			return fmt.Errorf("key %q appears twice in one object", key)
		}
		p.space()
		p.i++ // ':'
		v, err := p.value()
		if err != nil {
			return err
		}
		n.members = append(n.members, jsonMember{key, keyStart, v})
	}
}

// array reads an array's elements into n, from its '[' past its ']'.
func (p *jsonParser) array(n *jsonNode) error {
	p.i++
	for {
		p.space()
		if p.s[p.i] == ']' {
			p.i++
			return nil
		}
		if p.s[p.i] == ',' {
			p.i++
			continue
		}
		v, err := p.value()
		if err != nil {
			return err
		}
		n.elems = append(n.elems, v)
	}
}

// str moves past the string that starts at p.i.
func (p *jsonParser) str() {
	for p.i++; p.i < len(p.s) && p.s[p.i] != '"'; p.i++ {
		if p.s[p.i] == '\\' {
			p.i++
		}
	}
	p.i++
}

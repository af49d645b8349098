package cli

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	json "github.com/goccy/go-json"
	"github.com/pelletier/go-toml/v2"
)

// The TOML table Codex reads bl's server from, edited as text so that
// the rest of the file keeps its bytes, and checked with a TOML parser
// before and after: bl setup writes no file that does not parse, and no
// edit that changes anything but bl's own table.

// codexTable is the TOML table Codex reads bl's server from.
const codexTable = "mcp_servers.bl"

// editTOMLServer sets (or removes) the [mcp_servers.bl] table of a Codex
// config.toml. The file must parse as TOML; the table and its sub-tables
// are cut out line by line, and a bl server that is still there after
// that (dotted keys, an inline table under [mcp_servers]) is refused
// rather than edited, since two definitions of one key are invalid TOML.
func editTOMLServer(old []byte, command string, args []any, remove bool) ([]byte, error) {
	before, err := parseTOML(old)
	if err != nil {
		return nil, err
	}
	out, err := cutTOMLServer(old)
	if err != nil {
		return nil, err
	}
	kept, err := parseTOML([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("cannot take out its [%s] table safely: %v", codexTable, err)
	}
	if tomlServer(kept) != nil {
		return nil, fmt.Errorf("it defines the bl server in a form bl setup does not edit (dotted keys or an inline table); use a [%s] table", codexTable)
	}
	if srv, ok := tomlServer(before).(map[string]any); ok && !remove {
		for k := range srv {
			if k != "command" && k != "args" {
				return nil, fmt.Errorf("its [%s] holds %q, which bl setup would drop; edit the table by hand, or remove it first", codexTable, k)
			}
		}
	}
	if !reflect.DeepEqual(withoutTOMLServer(before), withoutTOMLServer(kept)) {
		return nil, fmt.Errorf("cannot take out its [%s] table without changing other settings; edit it by hand", codexTable)
	}
	if out != string(old) && strings.HasPrefix(string(old), out) {
		// The table was the file's end: the one newline setup put
		// before it goes with it.
		out = strings.TrimSuffix(out, "\n")
	}
	if remove {
		if strings.TrimSpace(out) == "" {
			return nil, nil
		}
		return []byte(out), nil
	}
	var quoted []string
	for _, a := range args {
		b, _ := json.Marshal(a)
		quoted = append(quoted, string(b))
	}
	if out != "" {
		// One newline before the table, which --remove takes out again:
		// a blank line after a last line that ends, the end of one that
		// does not.
		out += "\n"
	}
	cmd, _ := json.Marshal(command)
	out += "[" + codexTable + "]\ncommand = " + string(cmd) + "\nargs = [" + strings.Join(quoted, ", ") + "]\n"
	after, err := parseTOML([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("adding the [%s] table would not parse (%v); edit it by hand", codexTable, err)
	}
	want := map[string]any{"command": command, "args": args}
	if !reflect.DeepEqual(tomlServer(after), want) || !reflect.DeepEqual(withoutTOMLServer(after), withoutTOMLServer(kept)) {
		return nil, fmt.Errorf("cannot add the [%s] table without changing other settings; edit it by hand", codexTable)
	}
	return []byte(out), nil
}

// parseTOML decodes a TOML document, naming the line of an error.
func parseTOML(b []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(b, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("not valid TOML: line %d: %s", row, de.Error())
		}
		return nil, fmt.Errorf("not valid TOML: %v", err)
	}
	return doc, nil
}

// tomlServer is the mcp_servers.bl table of a decoded file, or nil.
func tomlServer(doc map[string]any) any {
	servers, _ := doc["mcp_servers"].(map[string]any)
	if servers == nil {
		return nil
	}
	return servers["bl"]
}

// withoutTOMLServer is doc without mcp_servers.bl (and without
// mcp_servers when that leaves it empty), for comparing the rest.
func withoutTOMLServer(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	if servers, ok := doc["mcp_servers"].(map[string]any); ok {
		rest := map[string]any{}
		for k, v := range servers {
			if k != "bl" {
				rest[k] = v
			}
		}
		if len(rest) == 0 {
			delete(out, "mcp_servers")
		} else {
			out["mcp_servers"] = rest
		}
	}
	return out
}

// cutTOMLServer is the file without its [mcp_servers.bl] table and sub-tables.
func cutTOMLServer(old []byte) (string, error) {
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
				return "", fmt.Errorf("line %d: a table header that does not end in ]", n+1)
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
				return "", fmt.Errorf("line %d is not TOML (neither a table nor key = value)", n+1)
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
		return "", errors.New("a value is not closed at the end of the file")
	}
	return strings.Join(kept, ""), nil
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

package mdplan

import (
	"strings"
	"testing"
)

func TestMarkdownNesting(t *testing.T) {
	in := "# M1\n- [ ] a\n  - [x] b\n    - [ ] c\n  - [ ] d\n- [ ] e\n"
	items, _, err := ReadMarkdown("plan.md", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, it := range items {
		parents[it.Title] = strings.TrimPrefix(it.Parent, "markdown:plan.md:")
	}
	want := map[string]string{"a": "", "b": "M1/a", "c": "M1/a/b", "d": "M1/a", "e": ""}
	for k, v := range want {
		if parents[k] != v {
			t.Errorf("parent of %s = %q, want %q", k, parents[k], v)
		}
	}
}

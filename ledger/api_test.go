package ledger

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPublicAPI: the package's exported names are the ones
// testdata/api.txt lists, so a move of code between the ledger's layers
// (wire, fold, store) cannot take a name away from callers outside. A name
// added on purpose is a line added there.
func TestPublicAPI(t *testing.T) {
	want, err := os.ReadFile("testdata/api.txt")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					got = append(got, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						got = append(got, s.Name.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							got = append(got, n.Name)
						}
					}
				}
			}
		}
	}
	got = slices.DeleteFunc(got, func(n string) bool { return !ast.IsExported(n) })
	slices.Sort(got)
	wantNames := strings.Fields(string(want))
	for _, n := range wantNames {
		if _, ok := slices.BinarySearch(got, n); !ok {
			t.Errorf("ledger no longer exports %s (testdata/api.txt): alias it (wire.go, fold.go) or remove it on purpose", n)
		}
	}
	for _, n := range got {
		if !slices.Contains(wantNames, n) {
			t.Errorf("ledger exports %s, which testdata/api.txt does not list: add it there if it is meant to be public", n)
		}
	}
}

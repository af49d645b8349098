// Command house measures the figures of the house that CONTRIBUTING.md
// tracks (make house): hand-written lines, the ledger root and
// internal/cli, Backlog's exported methods and the files they live in,
// long and complex functions, duplicate pairs and long files. Hand-written
// means Go outside tests, testdata and generated files ("Code generated
// ... DO NOT EDIT").
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The thresholds issue 35 counts against.
const (
	longFunc   = 60  // lines
	complexFn  = 30  // cyclomatic complexity, as gocyclo counts it
	longFile   = 600 // lines
	dupSeconds = 120
)

func main() {
	root := flag.String("root", ".", "the module's root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "house:", err)
		os.Exit(1)
	}
}

// file is one hand-written Go file.
type file struct {
	path  string // relative to the root, slash-separated
	lines int
	ast   *ast.File
	fset  *token.FileSet
}

var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func load(root string) (prod, tests []file, err error) {
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); rel != "." && (n == "testdata" || n == "node_modules" || n == "bin" || n == "dist" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.Match(src) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		hf := file{path: rel, lines: bytes.Count(src, []byte("\n")), ast: f, fset: fset}
		if strings.HasSuffix(rel, "_test.go") {
			tests = append(tests, hf)
		} else {
			prod = append(prod, hf)
		}
		return nil
	})
	return prod, tests, err
}

func run(root string) error {
	prod, tests, err := load(root)
	if err != nil {
		return err
	}
	sum := func(fs []file, keep func(string) bool) (n, lines int) {
		for _, f := range fs {
			if keep(f.path) {
				n++
				lines += f.lines
			}
		}
		return n, lines
	}
	all := func(string) bool { return true }
	inDir := func(dir string) func(string) bool {
		return func(p string) bool { return filepath.ToSlash(filepath.Dir(p)) == dir }
	}
	n, l := sum(prod, all)
	_, tl := sum(tests, all)
	fmt.Printf("hand-written lines          %d in %d files (tests: %d more)\n", l, n, tl)
	n, l = sum(prod, inDir("ledger"))
	fmt.Printf("ledger root                 %d files, %d lines\n", n, l)
	n, l = sum(prod, inDir("internal/cli"))
	fmt.Printf("internal/cli                %d files, %d lines\n", n, l)

	methods, files := backlogMethods(prod)
	fmt.Printf("Backlog exported methods    %d in %d files\n", methods, files)

	long, complex := funcFigures(prod)
	report("functions over 60 lines", long)
	report("complexity over 30", complex)

	var big []string
	for _, f := range prod {
		if f.lines > longFile {
			big = append(big, fmt.Sprintf("%d %s", f.lines, f.path))
		}
	}
	report("files over 600 lines", big)

	if _, err := exec.LookPath("duplicates"); err != nil {
		fmt.Println("duplicate pairs             (the duplicates command is not on PATH)")
		return nil
	}
	notProof := func(p string) bool { return !strings.HasPrefix(p, "proof/") }
	whole, err := duplicates(root, prod, notProof)
	if err != nil {
		return err
	}
	core, err := duplicates(root, prod, func(p string) bool { return inDir("ledger")(p) || inDir("internal/cli")(p) })
	if err != nil {
		return err
	}
	fmt.Printf("duplicate pairs (6+ lines)  %s over the tree (tests and proof/ aside); %s in the ledger root and internal/cli\n", whole, core)
	return nil
}

// funcFigures lists the functions over longFunc lines and those over
// complexFn, each row led by its figure.
func funcFigures(prod []file) (long, complex []string) {
	for _, f := range prod {
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := funcName(fn)
			lines := f.fset.Position(fn.End()).Line - f.fset.Position(fn.Pos()).Line + 1
			if lines > longFunc {
				long = append(long, fmt.Sprintf("%d %s %s", lines, f.path, name))
			}
			if c := cyclomatic(fn); c > complexFn {
				complex = append(complex, fmt.Sprintf("%d %s %s", c, f.path, name))
			}
		}
	}
	return long, complex
}

func report(what string, rows []string) {
	sort.Slice(rows, func(i, j int) bool {
		var a, b int
		fmt.Sscan(rows[i], &a)
		fmt.Sscan(rows[j], &b)
		return a > b
	})
	fmt.Printf("%-27s %d\n", what, len(rows))
	for _, r := range rows {
		fmt.Printf("    %s\n", r)
	}
}

// backlogMethods counts the exported methods of ledger.Backlog and the
// files they live in.
func backlogMethods(prod []file) (methods, files int) {
	seen := map[string]bool{}
	for _, f := range prod {
		if filepath.ToSlash(filepath.Dir(f.path)) != "ledger" {
			continue
		}
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
				continue
			}
			if recvType(fn) == "Backlog" {
				methods++
				seen[f.path] = true
			}
		}
	}
	return methods, len(seen)
}

func recvType(fn *ast.FuncDecl) string {
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv != nil {
		return "(" + recvType(fn) + ")." + fn.Name.Name
	}
	return fn.Name.Name
}

// cyclomatic is gocyclo's count: 1, plus one per if, for, range, case
// (default aside), select case (default aside), && and ||.
func cyclomatic(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// duplicates copies the files keep selects into a scratch directory, their
// import blocks blanked, and returns how many pairs the duplicates command
// finds there.
func duplicates(root string, prod []file, keep func(string) bool) (string, error) {
	dir, err := os.MkdirTemp("", "house-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for _, f := range prod {
		if !keep(f.path) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil {
			return "", err
		}
		src = blankImports(f, src)
		dst := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, src, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("duplicates", "--repo", dir, "--most", "1", "--seconds", fmt.Sprint(dupSeconds))
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("duplicates: %v", err)
	}
	// "212 pairs of places (...) (119 by shape alone, 95 of those marked
	// boilerplate)": the pairs of identical lines are the others.
	head, byShape := regexp.MustCompile(`^(\d+) pairs? of places`), regexp.MustCompile(`\((\d+) by shape alone`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := head.FindStringSubmatch(sc.Text()); m != nil {
			var all, shape int
			fmt.Sscan(m[1], &all)
			if sm := byShape.FindStringSubmatch(sc.Text()); sm != nil {
				fmt.Sscan(sm[1], &shape)
			}
			return fmt.Sprintf("%d (%d of identical lines)", all, all-shape), nil
		}
		if strings.HasPrefix(sc.Text(), "no pairs") || strings.HasPrefix(sc.Text(), "0 pairs") {
			return "0", nil
		}
	}
	return "?", fmt.Errorf("duplicates printed no count:\n%s", out)
}

// blankImports empties the lines of f's import declarations, keeping the
// line count: the duplicates command passes over import lines, but not
// the lines of a Go import block, so two files with the same imports were
// a pair.
func blankImports(f file, src []byte) []byte {
	lines := bytes.SplitAfter(src, []byte("\n"))
	for _, d := range f.ast.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		from, to := f.fset.Position(g.Pos()).Line, f.fset.Position(g.End()).Line
		for l := from; l <= to && l <= len(lines); l++ {
			lines[l-1] = []byte("\n")
		}
	}
	return bytes.Join(lines, nil)
}

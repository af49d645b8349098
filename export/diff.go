package export

import (
	"fmt"
	"strings"
)

// Diff describes how text old differs from text new as a unified diff
// ("--- oldName", "+++ newName", @@ hunks with context lines of context),
// cut after maxLines lines of hunks with a note of how many were left out.
// It returns "" when the texts are equal.
func Diff(oldName, old, newName, new string, context, maxLines int) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	ops := diffLines(a, b)

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	written, total := 0, 0
	emit := func(s string) {
		total++
		if maxLines <= 0 || written < maxLines {
			out.WriteString(s)
			written++
		}
	}
	// Group the edit script into hunks with context.
	i := 0
	for i < len(ops) {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start, end := max(0, i-context), hunkEnd(ops, i, context)
		emitHunk(ops[start:end], emit)
		i = end
	}
	if total > written {
		fmt.Fprintf(&out, "… %d more diff lines\n", total-written)
	}
	return out.String()
}

// hunkEnd is where the hunk holding the edit at i ends: past the last edit
// whose gap to the next is over 2×context lines, plus context.
func hunkEnd(ops []diffOp, i, context int) int {
	end := i
	for end < len(ops) {
		if ops[end].kind != ' ' {
			end++
			continue
		}
		run := end
		for run < len(ops) && ops[run].kind == ' ' {
			run++
		}
		if run == len(ops) || run-end > 2*context {
			return min(len(ops), end+context)
		}
		end = run
	}
	return end
}

// emitHunk writes one hunk: its header and its lines, marking a last line
// without a newline as diff does.
func emitHunk(hunk []diffOp, emit func(string)) {
	aLen, bLen := 0, 0
	for _, op := range hunk {
		if op.kind != '+' {
			aLen++
		}
		if op.kind != '-' {
			bLen++
		}
	}
	emit(fmt.Sprintf("@@ -%s +%s @@\n", hunkRange(hunk[0].a, aLen), hunkRange(hunk[0].b, bLen)))
	for _, op := range hunk {
		line := op.text
		if !strings.HasSuffix(line, "\n") {
			line += "\n\\ No newline at end of file\n"
		}
		emit(string(op.kind) + line)
	}
}

func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each newline, keeping them.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	a, b int  // line index in old and new where the op starts
	text string
}

// maxEdit bounds the search for a shortest edit script; beyond it the
// differing middle is reported as one replacement.
const maxEdit = 1000

// diffLines is Myers' O(ND) diff after trimming the common head and tail.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{' ', pre, pre, a[pre]})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	for _, op := range myers(ma, mb) {
		op.a += pre
		op.b += pre
		ops = append(ops, op)
	}
	for k := suf; k > 0; k-- {
		ops = append(ops, diffOp{' ', len(a) - k, len(b) - k, a[len(a)-k]})
	}
	return ops
}

func myers(a, b []string) []diffOp {
	if len(a) == 0 || len(b) == 0 {
		return replaceAll(a, b)
	}
	trace, found := myersTrace(a, b)
	if !found {
		return replaceAll(a, b)
	}
	return walkBack(a, b, trace)
}

// replaceAll is the edit script that deletes all of a and inserts all of
// b: for an empty side, or when the shortest script is longer than
// maxEdit.
func replaceAll(a, b []string) []diffOp {
	var ops []diffOp
	for i := range a {
		ops = append(ops, diffOp{'-', i, 0, a[i]})
	}
	for j := range b {
		ops = append(ops, diffOp{'+', len(a), j, b[j]})
	}
	return ops
}

// myersTrace is the forward pass: round d extends the furthest reaching
// paths with d edits until one reaches the end (found), at most maxEdit
// rounds. trace[d] holds v[k] for k in [-d-1, d+1] as it was when round d
// began: O(D²) memory, not O(D·(N+M)).
func myersTrace(a, b []string) (trace [][]int, found bool) {
	n, m := len(a), len(b)
	off := n + m + 1
	v := make([]int, 2*off+2)
	for d := 0; d <= min(n+m, maxEdit) && !found; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	return trace, found
}

// walkBack follows the trace from the end to the start, one edit and the
// equal lines before it per round, and returns the script in order.
func walkBack(a, b []string, trace [][]int) []diffOp {
	var rev []diffOp
	x, y := len(a), len(b)
	for d := len(trace) - 1; d > 0; d-- {
		vd := trace[d] // vd[k+d+1] is v[k]
		k := x - y
		var pk int
		if k == -d || (k != d && vd[k-1+d+1] < vd[k+1+d+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := vd[pk+d+1]
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, diffOp{' ', x, y, a[x]})
		}
		if x == px {
			y--
			rev = append(rev, diffOp{'+', x, y, b[y]})
		} else {
			x--
			rev = append(rev, diffOp{'-', x, y, a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffOp{' ', x, y, a[x]})
	}
	ops := make([]diffOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}

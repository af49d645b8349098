package export

import (
	"fmt"
	"slices"
	"strings"
)

// Sizes of the drawn DAG, in SVG user units (pixels).
const (
	nodeW   = 200
	nodeH   = 44
	colGap  = 72
	rowGap  = 14
	dummyH  = 2
	margin  = 16
	sweeps  = 16 // ordering passes
	aligns  = 8  // straightening passes
	curveDX = colGap / 2
)

// layout is a drawing of a graph: a box per node and an SVG path per edge
// (in the order of graph.edges). All coordinates are integers so the same
// graph always draws to the same bytes.
type layout struct {
	width, height int
	boxes         []rect
	paths         []string
}

type rect struct{ x, y, w, h int }

type point struct{ x, y int }

// layoutGraph draws g in layers, left to right (Sugiyama style):
//
//  1. Layering: a node's layer is the length of the longest dependency
//     path into it, so every edge points right. Input with a cycle has
//     one edge per cycle set aside (drawn, but not layered).
//  2. Edges that span several layers get a chain of invisible dummy
//     vertices, one per layer crossed, so they route between boxes.
//  3. Ordering: alternating down and up sweeps sort each layer by the
//     barycentre of its neighbours in the previous one; the ordering with
//     the fewest crossings wins.
//  4. Placement: boxes are pulled towards their neighbours' heights while
//     keeping their order and spacing, then the drawing is shifted to the
//     margin.
//
// Edges are cubic curves between layers and straight lines through the
// columns they cross.
func layoutGraph(g graph) layout {
	n := len(g.nodes)
	out := layout{boxes: make([]rect, n), paths: make([]string, len(g.edges))}
	if n == 0 {
		out.width, out.height = 2*margin+nodeW, 2*margin+nodeH
		return out
	}

	// 1. Longest-path layering, Kahn style, breaking cycles if any.
	in := make([][]int, n)   // edge indexes into each node
	outE := make([][]int, n) // edge indexes out of each node
	for i, e := range g.edges {
		outE[e.from] = append(outE[e.from], i)
		in[e.to] = append(in[e.to], i)
	}
	layerOf := make([]int, n)
	indeg := make([]int, n)
	for v := range n {
		indeg[v] = len(in[v])
	}
	ignored := make([]bool, len(g.edges))
	done := make([]bool, n)
	var queue []int
	for v := range n {
		if indeg[v] == 0 {
			queue = append(queue, v)
		}
	}
	for processed := 0; processed < n; {
		if len(queue) == 0 {
			// A cycle: release the first node left, setting aside the
			// edges into it that are still pending.
			v := slices.Index(done, false)
			for _, ei := range in[v] {
				if !done[g.edges[ei].from] {
					ignored[ei] = true
				}
			}
			indeg[v] = 0
			queue = append(queue, v)
		}
		v := queue[0]
		queue = queue[1:]
		if done[v] {
			continue
		}
		done[v] = true
		processed++
		for _, ei := range outE[v] {
			w := g.edges[ei].to
			if ignored[ei] || done[w] {
				ignored[ei] = ignored[ei] || done[w]
				continue
			}
			layerOf[w] = max(layerOf[w], layerOf[v]+1)
			if indeg[w]--; indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}

	// 2. Vertices: the nodes, then dummies; chains per edge.
	layerV := slices.Clone(layerOf) // layer of every vertex
	chains := make([][]int, len(g.edges))
	for i, e := range g.edges {
		u, w := e.from, e.to
		chain := []int{u}
		if !ignored[i] {
			for l := layerOf[u] + 1; l < layerOf[w]; l++ {
				chain = append(chain, len(layerV))
				layerV = append(layerV, l)
			}
		}
		chains[i] = append(chain, w)
	}
	nv := len(layerV)
	up := make([][]int, nv)   // neighbours one layer to the left
	down := make([][]int, nv) // neighbours one layer to the right
	for i, ch := range chains {
		if ignored[i] {
			continue
		}
		for k := 0; k+1 < len(ch); k++ {
			down[ch[k]] = append(down[ch[k]], ch[k+1])
			up[ch[k+1]] = append(up[ch[k+1]], ch[k])
		}
	}
	nLayers := slices.Max(layerV) + 1
	layers := make([][]int, nLayers)
	for v, l := range layerV {
		layers[l] = append(layers[l], v)
	}

	// 3. Ordering.
	pos := make([]int, nv)
	setPos := func() {
		for _, layer := range layers {
			for i, v := range layer {
				pos[v] = i
			}
		}
	}
	// Start from depth-first order along the edges, which keeps each
	// chain of dependencies together before any sweep.
	visit := make([]int, nv)
	for v := range visit {
		visit[v] = -1
	}
	seq := 0
	var dfs func(v int)
	dfs = func(v int) {
		visit[v] = seq
		seq++
		for _, w := range down[v] {
			if visit[w] < 0 {
				dfs(w)
			}
		}
	}
	for _, v := range layers[0] {
		if visit[v] < 0 {
			dfs(v)
		}
	}
	for v := range nv {
		if visit[v] < 0 {
			dfs(v)
		}
	}
	for _, layer := range layers {
		slices.SortFunc(layer, func(a, b int) int { return visit[a] - visit[b] })
	}
	setPos()
	best := cloneLayers(layers)
	bestX := crossings(layers, down, pos)
	for it := 0; it < sweeps && bestX > 0; it++ {
		if it%2 == 0 {
			for l := 1; l < nLayers; l++ {
				orderBy(layers[l], up, pos)
			}
		} else {
			for l := nLayers - 2; l >= 0; l-- {
				orderBy(layers[l], down, pos)
			}
		}
		if x := crossings(layers, down, pos); x < bestX {
			best, bestX = cloneLayers(layers), x
		}
	}
	layers = best
	setPos()

	// 4. Placement: y is a vertex's centre.
	height := func(v int) int {
		if v < n {
			return nodeH
		}
		return dummyH
	}
	sep := func(a, b int) int { return (height(a)+height(b))/2 + rowGap }
	y := make([]int, nv)
	tallest := 0
	for _, layer := range layers {
		h := 0
		for i, v := range layer {
			if i > 0 {
				h += sep(layer[i-1], v)
			}
			y[v] = h
		}
		tallest = max(tallest, h)
	}
	for _, layer := range layers { // centre the layers on each other
		if len(layer) == 0 {
			continue
		}
		shift := (tallest - y[layer[len(layer)-1]]) / 2
		for _, v := range layer {
			y[v] += shift
		}
	}
	for it := range aligns {
		order := make([]int, nLayers)
		for l := range order {
			order[l] = l
		}
		if it%2 == 1 {
			slices.Reverse(order)
		}
		for _, l := range order {
			place(layers[l], y, up, down, sep)
		}
	}
	minY, maxY := 0, 0
	for v := range nv {
		top, bottom := y[v]-height(v)/2, y[v]+height(v)/2
		if v == 0 || top < minY {
			minY = top
		}
		if v == 0 || bottom > maxY {
			maxY = bottom
		}
	}
	for v := range nv {
		y[v] += margin - minY
	}
	colX := func(v int) int { return margin + layerV[v]*(nodeW+colGap) }
	for v := range n {
		out.boxes[v] = rect{x: colX(v), y: y[v] - nodeH/2, w: nodeW, h: nodeH}
	}
	out.width = 2*margin + nLayers*nodeW + (nLayers-1)*colGap
	out.height = maxY - minY + 2*margin

	// Edges.
	for i, ch := range chains {
		var pts []point
		pts = append(pts, point{colX(ch[0]) + nodeW, y[ch[0]]})
		for _, d := range ch[1 : len(ch)-1] {
			pts = append(pts, point{colX(d), y[d]}, point{colX(d) + nodeW, y[d]})
		}
		last := ch[len(ch)-1]
		pts = append(pts, point{colX(last) - 6, y[last]}) // room for the arrowhead
		var d strings.Builder
		fmt.Fprintf(&d, "M%d %d", pts[0].x, pts[0].y)
		for k := 1; k < len(pts); k++ {
			p, q := pts[k-1], pts[k]
			if k%2 == 0 {
				fmt.Fprintf(&d, " L%d %d", q.x, q.y) // through a dummy's column
				continue
			}
			dx := max(curveDX, (q.x-p.x)/2)
			fmt.Fprintf(&d, " C%d %d %d %d %d %d", p.x+dx, p.y, q.x-dx, q.y, q.x, q.y)
		}
		out.paths[i] = d.String()
	}
	return out
}

func cloneLayers(layers [][]int) [][]int {
	out := make([][]int, len(layers))
	for i, l := range layers {
		out[i] = slices.Clone(l)
	}
	return out
}

// orderBy sorts a layer by the mean position of each vertex's neighbours
// (in nb), keeping vertices without neighbours where they are, and updates
// pos.
func orderBy(layer []int, nb [][]int, pos []int) {
	type key struct{ sum, cnt, at int }
	keys := make(map[int]key, len(layer))
	for i, v := range layer {
		k := key{sum: i, cnt: 1, at: i}
		if len(nb[v]) > 0 {
			k = key{at: i}
			for _, w := range nb[v] {
				k.sum += pos[w]
				k.cnt++
			}
		}
		keys[v] = k
	}
	slices.SortStableFunc(layer, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		// ka.sum/ka.cnt vs kb.sum/kb.cnt, exactly.
		if l, r := ka.sum*kb.cnt, kb.sum*ka.cnt; l != r {
			if l < r {
				return -1
			}
			return 1
		}
		return ka.at - kb.at
	})
	for i, v := range layer {
		pos[v] = i
	}
}

// crossings counts pairs of edges that cross between adjacent layers.
func crossings(layers [][]int, down [][]int, pos []int) int {
	total := 0
	for l := 0; l+1 < len(layers); l++ {
		var pairs []point
		for _, u := range layers[l] {
			for _, w := range down[u] {
				pairs = append(pairs, point{pos[u], pos[w]})
			}
		}
		slices.SortFunc(pairs, func(a, b point) int {
			if a.x != b.x {
				return a.x - b.x
			}
			return a.y - b.y
		})
		// Count inversions of the targets with a Fenwick tree.
		size := len(layers[l+1]) + 1
		tree := make([]int, size+1)
		seen := 0
		for _, p := range pairs {
			// how many earlier targets are greater than p.y
			le := 0
			for i := p.y + 1; i > 0; i -= i & -i {
				le += tree[i]
			}
			total += seen - le
			for i := p.y + 1; i <= size; i += i & -i {
				tree[i]++
			}
			seen++
		}
	}
	return total
}

// place moves the vertices of one layer towards the mean height of their
// neighbours, keeping their order and spacing: the average of the
// top-down and bottom-up tightest placements around the wished heights.
func place(layer []int, y []int, up, down [][]int, sep func(a, b int) int) {
	k := len(layer)
	if k == 0 {
		return
	}
	want := make([]int, k)
	for i, v := range layer {
		sum, cnt := 0, 0
		for _, w := range up[v] {
			sum, cnt = sum+y[w], cnt+1
		}
		for _, w := range down[v] {
			sum, cnt = sum+y[w], cnt+1
		}
		want[i] = y[v]
		if cnt > 0 {
			want[i] = floorDiv(sum, cnt)
		}
	}
	fwd := make([]int, k)
	bwd := make([]int, k)
	for i := range k {
		fwd[i] = want[i]
		if i > 0 {
			fwd[i] = max(fwd[i], fwd[i-1]+sep(layer[i-1], layer[i]))
		}
	}
	for i := k - 1; i >= 0; i-- {
		bwd[i] = want[i]
		if i < k-1 {
			bwd[i] = min(bwd[i], bwd[i+1]-sep(layer[i], layer[i+1]))
		}
	}
	for i, v := range layer {
		y[v] = floorDiv(fwd[i]+bwd[i], 2)
	}
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

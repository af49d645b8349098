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
	layerOf, ignored := layerNodes(g)
	vs := withDummies(g, layerOf, ignored)
	vs.order()
	y, minY, maxY := vs.place()
	colX := func(v int) int { return margin + vs.layerV[v]*(nodeW+colGap) }
	for v := range n {
		out.boxes[v] = rect{x: colX(v), y: y[v] - nodeH/2, w: nodeW, h: nodeH}
	}
	nLayers := len(vs.layers)
	out.width = 2*margin + nLayers*nodeW + (nLayers-1)*colGap
	out.height = maxY - minY + 2*margin
	for i, ch := range vs.chains {
		out.paths[i] = edgePath(ch, y, colX)
	}
	return out
}

// layerNodes is step 1: longest-path layering, Kahn style. A cycle is
// broken by releasing the first node left and setting aside (ignored) the
// edges into it that are still pending.
func layerNodes(g graph) (layerOf []int, ignored []bool) {
	n := len(g.nodes)
	in := make([][]int, n)   // edge indexes into each node
	outE := make([][]int, n) // edge indexes out of each node
	for i, e := range g.edges {
		outE[e.from] = append(outE[e.from], i)
		in[e.to] = append(in[e.to], i)
	}
	layerOf = make([]int, n)
	indeg := make([]int, n)
	for v := range n {
		indeg[v] = len(in[v])
	}
	ignored = make([]bool, len(g.edges))
	done := make([]bool, n)
	var queue []int
	for v := range n {
		if indeg[v] == 0 {
			queue = append(queue, v)
		}
	}
	for processed := 0; processed < n; {
		if len(queue) == 0 {
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
	return layerOf, ignored
}

// vertices is the layered graph steps 3 and 4 work on: the nodes
// (0..n-1), then the dummies that carry long edges through the layers
// they cross.
type vertices struct {
	n      int     // nodes; the vertices from n on are dummies
	layerV []int   // layer of every vertex
	chains [][]int // per edge, the vertices it runs through
	up     [][]int // neighbours one layer to the left
	down   [][]int // neighbours one layer to the right
	layers [][]int // the vertices of each layer, in drawing order
}

// withDummies is step 2: the vertices, with a chain per edge.
func withDummies(g graph, layerOf []int, ignored []bool) *vertices {
	vs := &vertices{n: len(g.nodes), layerV: slices.Clone(layerOf), chains: make([][]int, len(g.edges))}
	for i, e := range g.edges {
		u, w := e.from, e.to
		chain := []int{u}
		if !ignored[i] {
			for l := layerOf[u] + 1; l < layerOf[w]; l++ {
				chain = append(chain, len(vs.layerV))
				vs.layerV = append(vs.layerV, l)
			}
		}
		vs.chains[i] = append(chain, w)
	}
	nv := len(vs.layerV)
	vs.up, vs.down = make([][]int, nv), make([][]int, nv)
	for i, ch := range vs.chains {
		if ignored[i] {
			continue
		}
		for k := 0; k+1 < len(ch); k++ {
			vs.down[ch[k]] = append(vs.down[ch[k]], ch[k+1])
			vs.up[ch[k+1]] = append(vs.up[ch[k+1]], ch[k])
		}
	}
	vs.layers = make([][]int, slices.Max(vs.layerV)+1)
	for v, l := range vs.layerV {
		vs.layers[l] = append(vs.layers[l], v)
	}
	return vs
}

// order is step 3: from depth-first order, alternating sweeps by
// barycentre, keeping the ordering with the fewest crossings.
func (vs *vertices) order() {
	nLayers := len(vs.layers)
	pos := make([]int, len(vs.layerV))
	setPos := func() {
		for _, layer := range vs.layers {
			for i, v := range layer {
				pos[v] = i
			}
		}
	}
	vs.depthFirst()
	setPos()
	best := cloneLayers(vs.layers)
	bestX := crossings(vs.layers, vs.down, pos)
	for it := 0; it < sweeps && bestX > 0; it++ {
		if it%2 == 0 {
			for l := 1; l < nLayers; l++ {
				orderBy(vs.layers[l], vs.up, pos)
			}
		} else {
			for l := nLayers - 2; l >= 0; l-- {
				orderBy(vs.layers[l], vs.down, pos)
			}
		}
		if x := crossings(vs.layers, vs.down, pos); x < bestX {
			best, bestX = cloneLayers(vs.layers), x
		}
	}
	vs.layers = best
}

// depthFirst sorts each layer in depth-first order along the edges, which
// keeps each chain of dependencies together before any sweep.
func (vs *vertices) depthFirst() {
	nv := len(vs.layerV)
	visit := make([]int, nv)
	for v := range visit {
		visit[v] = -1
	}
	seq := 0
	var dfs func(v int)
	dfs = func(v int) {
		visit[v] = seq
		seq++
		for _, w := range vs.down[v] {
			if visit[w] < 0 {
				dfs(w)
			}
		}
	}
	for _, v := range vs.layers[0] {
		if visit[v] < 0 {
			dfs(v)
		}
	}
	for v := range nv {
		if visit[v] < 0 {
			dfs(v)
		}
	}
	for _, layer := range vs.layers {
		slices.SortFunc(layer, func(a, b int) int { return visit[a] - visit[b] })
	}
}

func (vs *vertices) height(v int) int {
	if v < vs.n {
		return nodeH
	}
	return dummyH
}

// place is step 4: y is a vertex's centre, shifted to the margin; minY
// and maxY are the drawing's extent before the shift.
func (vs *vertices) place() (y []int, minY, maxY int) {
	sep := func(a, b int) int { return (vs.height(a)+vs.height(b))/2 + rowGap }
	y = vs.stacked(sep)
	for it := range aligns {
		order := make([]int, len(vs.layers))
		for l := range order {
			order[l] = l
		}
		if it%2 == 1 {
			slices.Reverse(order)
		}
		for _, l := range order {
			place(vs.layers[l], y, vs.up, vs.down, sep)
		}
	}
	for v := range y {
		top, bottom := y[v]-vs.height(v)/2, y[v]+vs.height(v)/2
		if v == 0 || top < minY {
			minY = top
		}
		if v == 0 || bottom > maxY {
			maxY = bottom
		}
	}
	for v := range y {
		y[v] += margin - minY
	}
	return y, minY, maxY
}

// stacked is the placement the straightening starts from: each layer's
// vertices stacked at their spacing, the layers centred on each other.
func (vs *vertices) stacked(sep func(a, b int) int) []int {
	y := make([]int, len(vs.layerV))
	tallest := 0
	for _, layer := range vs.layers {
		h := 0
		for i, v := range layer {
			if i > 0 {
				h += sep(layer[i-1], v)
			}
			y[v] = h
		}
		tallest = max(tallest, h)
	}
	for _, layer := range vs.layers {
		if len(layer) == 0 {
			continue
		}
		shift := (tallest - y[layer[len(layer)-1]]) / 2
		for _, v := range layer {
			y[v] += shift
		}
	}
	return y
}

// edgePath is the SVG path of one edge's chain: cubic curves between
// layers, straight lines through the columns of its dummies.
func edgePath(ch []int, y []int, colX func(int) int) string {
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
	return d.String()
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

//go:build race

package cli

// raceDetector: under the race detector the CPU-bound equivalence runs
// take a sample of their corpus; go test without -race runs all of it.
const raceDetector = true

//go:build race

package importer_test

// raceDetector: the race detector's shadow memory and allocation
// tracking change the heap the memory tests measure.
const raceDetector = true

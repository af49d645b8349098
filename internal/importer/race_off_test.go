//go:build !race

package importer_test

const raceDetector = false

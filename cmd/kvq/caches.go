package main

import "kvq/kv"

// splitSpecs are the split key/value specs the listings add to the cache types.
var splitSpecs = []string{"kivi4/kivi2", "kivi3:rope=pre/kivi2", "kivi2:rope=pre/kivi2", "q8/q4"}

// cacheSpecs lists every cache type of the codec registry with default parameters
// (f32 first), then splitSpecs: what kvq eval and kvq inspect show by default.
func cacheSpecs() []string {
	var specs []string
	for _, t := range kv.Types() {
		specs = append(specs, t.String())
	}
	return append(specs, splitSpecs...)
}

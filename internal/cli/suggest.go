package cli

// closest returns the candidate closest to s, or "" when none is close
// enough to be a likely typo: at most two edits away, and fewer than half
// of s ("srve" suggests "serve"; "x" suggests nothing).
func closest(s string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist >= 0 && bestDist <= 2 && bestDist*2 < len(s) {
		return best
	}
	return ""
}

// editDistance is the number of insertions, deletions, substitutions and
// swaps of adjacent bytes that make a into b (the optimal string alignment
// distance): "clal" is one swap away from "call".
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

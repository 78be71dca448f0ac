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

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

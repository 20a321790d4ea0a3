package auth

// CacheLen returns the number of tokens v has cached.
func CacheLen(v *Verifier) int {
	if v.cache == nil {
		return 0
	}
	return v.cache.len()
}

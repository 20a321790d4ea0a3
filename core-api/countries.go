package coreapi

import "strings"

// countryCodes are the 249 officially assigned ISO 3166-1 alpha-2 codes,
// sorted, two letters each (taken from tzdata's iso3166.tab, which tracks
// the ISO 3166 Maintenance Agency). User-assigned codes such as XK are not
// accepted.
const countryCodes = "" +
	"ADAEAFAGAIALAMAOAQARASATAUAWAXAZBABBBDBEBFBGBHBIBJBLBMBNBOBQBRBSBTBVBWBYBZCACCCDCFCGCHCICKCLCMCNCOCR" +
	"CUCVCWCXCYCZDEDJDKDMDODZECEEEGEHERESETFIFJFKFMFOFRGAGBGDGEGFGGGHGIGLGMGNGPGQGRGSGTGUGWGYHKHMHNHRHTHU" +
	"IDIEILIMINIOIQIRISITJEJMJOJPKEKGKHKIKMKNKPKRKWKYKZLALBLCLILKLRLSLTLULVLYMAMCMDMEMFMGMHMKMLMMMNMOMPMQ" +
	"MRMSMTMUMVMWMXMYMZNANCNENFNGNINLNONPNRNUNZOMPAPEPFPGPHPKPLPMPNPRPSPTPWPYQARERORSRURWSASBSCSDSESGSHSI" +
	"SJSKSLSMSNSOSRSSSTSVSXSYSZTCTDTFTGTHTJTKTLTMTNTOTRTTTVTWTZUAUGUMUSUYUZVAVCVEVGVIVNVUWFWSYEYTZAZMZW"

// ValidCountry reports whether c is an assigned ISO 3166-1 alpha-2 code
// (upper case).
func ValidCountry(c string) bool {
	if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
		return false
	}
	// Binary search over the fixed-width table.
	lo, hi := 0, len(countryCodes)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch s := countryCodes[2*m : 2*m+2]; strings.Compare(s, c) {
		case 0:
			return true
		case -1:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

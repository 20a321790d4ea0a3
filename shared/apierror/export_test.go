package apierror

import "github.com/payorch/shared/logging/panscan"

func redact(s string) string { return panscan.Redact(s) }

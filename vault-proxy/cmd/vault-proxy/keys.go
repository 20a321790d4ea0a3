package main

import (
	"context"
	"fmt"
)

func keys(ctx context.Context, args []string) error {
	return fmt.Errorf("keys: not implemented yet")
}

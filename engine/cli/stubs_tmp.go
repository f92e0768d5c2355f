package cli

import "context"

func cmdFit(ctx context.Context, env *Env, args []string) error    { return usagef("fit: being wired") }
func cmdBudget(ctx context.Context, env *Env, args []string) error { return usagef("budget: being wired") }

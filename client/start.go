package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/dplr/dplr/engine/host"
)

// startAll starts every discovered plugin not yet started, concurrently.
// Plugins that fail are recorded, never fatal; a plugin serving an
// estimator already served by an earlier one is ignored and recorded.
// Callers hold mu.
func (c *Client) startAll(ctx context.Context) error {
	if c.all {
		return nil
	}
	paths, err := c.discover()
	if err != nil {
		return err
	}
	have := map[string]*host.Plugin{}
	for _, p := range c.plugins {
		have[p.Path] = p
	}
	plugins := make([]*host.Plugin, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		if p, ok := have[path]; ok {
			plugins[i] = p
			continue
		}
		if _, failed := c.failed[path]; failed {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			plugins[i], errs[i] = host.Start(ctx, path, c.hopt)
		}()
	}
	wg.Wait()
	c.plugins = c.register(paths, plugins, errs)
	c.all = true
	return nil
}

// register keeps the started plugins in search order, records failures and
// drops (closing it) a plugin serving an estimator an earlier one serves.
func (c *Client) register(paths []string, plugins []*host.Plugin, errs []error) []*host.Plugin {
	var kept []*host.Plugin
	seen := map[string]string{}
	for i, path := range paths {
		if errs[i] != nil {
			c.failures = append(c.failures, errs[i])
			c.failed[path] = errs[i]
			continue
		}
		p := plugins[i]
		if p == nil {
			continue
		}
		dup := false
		for _, e := range p.Estimators {
			if other, ok := seen[e.Name]; ok {
				c.failures = append(c.failures, fmt.Errorf("plugin %s: estimator %q already served by %s; ignoring this plugin", p.Path, e.Name, other))
				dup = true
				break
			}
		}
		if dup {
			p.Close()
			continue
		}
		for _, e := range p.Estimators {
			seen[e.Name] = p.Path
		}
		kept = append(kept, p)
	}
	return kept
}

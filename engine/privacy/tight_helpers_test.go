package privacy

// tightEpsilon is the smallest ε at delta that the package certifies for
// steps under any grant: Compose's tight candidates, and for an all-pure
// run the privacy loss distribution that Certify adds.
func tightEpsilon(steps []Step, delta float64) (float64, string, error) {
	ach, err := composeTight(Grant{Kind: GrantApprox, Epsilon: 1e9, Delta: delta}, steps, true)
	if err != nil {
		return 0, "", err
	}
	if c, ok := pldCandidate(steps, delta); ok && c.Epsilon < ach.Epsilon {
		ach = c
	}
	return ach.Epsilon, ach.Composition, nil
}

// composeCharges tallies charges and composes them against total, as the
// ledger does with a data set's history.
func composeCharges(total Grant, charges []Charge) (Spent, error) {
	var a Tally
	for _, c := range charges {
		if !c.Valid() {
			return Spent{}, ErrInvalidBudget
		}
		a.Add(c)
	}
	return ComposeTally(total, a)
}

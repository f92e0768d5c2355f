package privacy

// Test helpers that declare one step through the raw Spend and return its
// noise scale, for tests that draw (or do not draw) the noise themselves.

func (a *Accountant) spendStep(st Step, err error) (float64, error) {
	if err == nil {
		err = a.Spend(st)
	}
	if err != nil {
		return 0, err
	}
	return st.Scale, nil
}

func (a *Accountant) spendGaussianRho(name string, sens float64, dim int, rho float64) (float64, error) {
	return a.spendStep(gaussianRhoStep(name, sens, dim, rho))
}

func (a *Accountant) spendGaussianEpsDelta(name string, sens float64, dim int, eps, delta float64, calibration string) (float64, error) {
	return a.spendStep(gaussianEpsDeltaStep(name, sens, dim, eps, delta, calibration))
}

func (a *Accountant) spendLaplace(name string, sens float64, dim int, eps float64) (float64, error) {
	return a.spendStep(laplaceStep(name, sens, dim, eps))
}

func (a *Accountant) spendExponential(name string, sens, eps float64) (float64, error) {
	return a.spendStep(exponentialStep(name, sens, eps))
}

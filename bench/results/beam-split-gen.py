# The data of beam-split.sh: 10^7 x 20 float64 rows as one .npy file and as 8 .npy shards.
import numpy as np
n, p, k = 10**7, 20, 8
rng = np.random.default_rng(7)
x = rng.standard_normal((n, p)) * 0.3
np.save('/dev/shm/beamsplit/one/x.npy', x)
m = n // k
for i in range(k):
    np.save('/dev/shm/beamsplit/shards/part-%d.npy' % i, x[i*m:(i+1)*m])

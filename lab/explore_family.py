"""First measurement of the distilled-copy trap on synthetic families (docs/task_prior.md); run:
python -m lab.explore_family (from the checkout's root)"""
import time
from testkit.pools import family_pool
from sklearn.preprocessing import StandardScaler
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from scipy.stats import spearmanr
from embedselect.metrics import MetricContext, get_metric
def acc(x,y):
    return cross_val_score(make_pipeline(StandardScaler(), LogisticRegression(C=0.1,max_iter=2000)), x, y, cv=5).mean()
for seed in [0,1]:
    p = family_pool(seed)
    E, y = p['embeddings'], p['labels']
    gt = {k: acc(v,y) for k,v in E.items()}
    print('seed',seed, {k: round(v,3) for k,v in gt.items()})
    for opts in [{}, {'n_classes':8}, {'tau':0.01}, {'prior':'loo'}]:
        t=time.time()
        r = get_metric('task_prior')(MetricContext(embeddings=E, run_keys={k:k for k in E}, seed=0, options=opts))
        ks = list(E)
        s = r.scores
        rho=spearmanr([s[k] for k in ks],[gt[k] for k in ks])[0]
        print(opts, 'rho %.2f'%rho, 'top', max(s,key=s.get), {k: round(v,3) for k,v in s.items()}, '%.1fs'%(time.time()-t))

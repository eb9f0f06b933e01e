"""What tests/ and benchmarks/ share (neither imports the other): tiny models built from scratch
(:mod:`testkit.tinymodels`), the loopback fake hub (:mod:`testkit.hubserver`), synthetic candidate pools with a known
ground truth (:mod:`testkit.pools`), small metric options (:mod:`testkit.options`), a SIGKILL at a named stage (:mod:`testkit.kills`), the test session's environment
(:mod:`testkit.session`) and pytest fixtures (:mod:`testkit.fixtures`). It imports embedselect and third-party libraries only; it is not part of the installed
package (``tests/test_layers.py`` checks both rules)."""

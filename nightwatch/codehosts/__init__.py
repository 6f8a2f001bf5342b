"""Code hosts: where the agent reads the code (a local git checkout or GitHub), behind one Protocol."""

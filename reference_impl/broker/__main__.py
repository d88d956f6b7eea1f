"""``python -m reference_impl.broker CONFIG``"""

from reference_impl.broker.broker import main

raise SystemExit(main())

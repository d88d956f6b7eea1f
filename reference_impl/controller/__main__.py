"""``python -m reference_impl.controller CONFIG``"""

from reference_impl.controller.controller import main

raise SystemExit(main())

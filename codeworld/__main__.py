import sys

from codeworld.cli import main

sys.exit(main())

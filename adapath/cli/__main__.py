from adapath.cli import main

main()

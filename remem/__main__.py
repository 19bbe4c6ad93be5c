from remem.entry import main

main()

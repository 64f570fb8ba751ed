"A kind module that cannot be imported (the registry's error must name it)"

raise RuntimeError("this module is broken on purpose")

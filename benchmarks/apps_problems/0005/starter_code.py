def is_balanced(s):

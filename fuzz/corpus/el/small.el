# an edge list
0 1
1 2
2 0
2 3

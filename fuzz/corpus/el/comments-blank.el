% comment

5 0
0 5

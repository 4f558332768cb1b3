module lockd.example/lockd

go 1.19
